package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GateKind is the kind of Gate objects.
const GateKind = "Gate"

// GateState is the state a gate is in or returns to.
// +kubebuilder:validation:Enum=opened;closed
type GateState string

const (
	// GateOpened lets the objects that wait on the gate go ahead.
	GateOpened GateState = "opened"
	// GateClosed holds them.
	GateClosed GateState = "closed"
)

// GateSpec defines the default state of a gate and how long a manual request lasts.
// +kubebuilder:validation:XValidation:rule="!(has(self.closed) && has(self.default))",message="set either spec.default or spec.closed, not both"
type GateSpec struct {
	// Default is the state of the gate when no request or schedule applies (default `opened`).
	// +optional
	Default GateState `json:"default,omitempty"`

	// Closed is the static form of a gate: `closed: true` is `default: closed`.
	// +optional
	Closed *bool `json:"closed,omitempty"`

	// Window is how long an open or close request lasts before the gate returns to its schedule or
	// default; unset, a request lasts until the next request.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`

	// Interval at which the gate is re-evaluated when nothing else triggers it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// GateStatus is the observed state of a gate.
type GateStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: `Opened` (True when the gate is opened) and `Ready`.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// RequestedAt is the time of the open or close request in force.
	// +optional
	RequestedAt *metav1.Time `json:"requestedAt,omitempty"`

	// ResetToDefaultAt is when the request in force expires.
	// +optional
	ResetToDefaultAt *metav1.Time `json:"resetToDefaultAt,omitempty"`

	// NextTransitionAt is when the gate will next change state by itself.
	// +optional
	NextTransitionAt *metav1.Time `json:"nextTransitionAt,omitempty"`
}

// Gate holds the objects that refer to it in `spec.gates` while it is closed.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Opened",type="string",JSONPath=".status.conditions[?(@.type==\"Opened\")].status"
// +kubebuilder:printcolumn:name="Next",type="string",JSONPath=".status.nextTransitionAt"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Gate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GateSpec   `json:"spec,omitempty"`
	Status GateStatus `json:"status,omitempty"`
}

// GateList is a list of gates.
// +kubebuilder:object:root=true
type GateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Gate{}, &GateList{})
}
