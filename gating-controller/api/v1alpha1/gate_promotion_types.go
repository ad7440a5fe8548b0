package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatePromotion opens the gate for one revision at a time: the revision that the objects of
// From have applied and kept Ready for Soak (docs/gate.md, "Promotion").
type GatePromotion struct {
	// From are the objects a revision is promoted from, such as staging's ManifestGeneration:
	// each must have applied the revision and be Ready with it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +required
	From []GateObjectReference `json:"from"`

	// Soak is how long the objects must have kept the revision applied and Ready; a failure
	// (Ready not True) starts it again. Unset: as soon as they are Ready with it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Soak *metav1.Duration `json:"soak,omitempty"`
}

// GateObjectReference names an object a gate reads.
type GateObjectReference struct {
	// APIVersion of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`

	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the object: the gate's when empty. Another namespace needs
	// spec.serviceAccountName, whose permissions then decide what may be read.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GateCheck holds the gate closed while an object is missing or not ready: a ResourceSet
// dependsOn entry, evaluated the same way (docs/gate.md, "Checks").
type GateCheck struct {
	GateObjectReference `json:",inline"`

	// Ready requires the object to be ready (kstatus, or its Ready condition for a custom
	// resource) when ReadyExpr is not set.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// ReadyExpr is a CEL expression over the object that must return true, such as
	// `status.availableReplicas == status.replicas`.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ReadyExpr string `json:"readyExpr,omitempty"`
}

// GatePromotionStatus is where the promotion of a gate stands.
type GatePromotionStatus struct {
	// Revision is the last revision promoted: the gate is opened for it, and for it only.
	// +optional
	Revision string `json:"revision,omitempty"`

	// PromotedAt is when Revision was promoted.
	// +optional
	PromotedAt *metav1.Time `json:"promotedAt,omitempty"`

	// Candidate is the revision the objects of spec.promotion.from have applied and that is not
	// promoted yet: soaking, or waiting for them.
	// +optional
	Candidate string `json:"candidate,omitempty"`

	// SoakingSince is since when the objects have kept Candidate applied and Ready.
	// +optional
	SoakingSince *metav1.Time `json:"soakingSince,omitempty"`

	// OpensAt is when Candidate will have soaked, if nothing fails.
	// +optional
	OpensAt *metav1.Time `json:"opensAt,omitempty"`

	// Message says what the promotion waits for.
	// +optional
	Message string `json:"message,omitempty"`
}
