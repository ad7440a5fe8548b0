package testapi

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// ConsumerSpec waits on gates.
type ConsumerSpec struct {
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`
	// Suspend pauses the consumer, for the lifecycle tests.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Revision is what the lifecycle tests' kind applies.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// ConsumerStatus is what a controller reports, for the status and lifecycle tests.
type ConsumerStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// +optional
	Inventory *ConsumerInventory `json:"inventory,omitempty"`
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`
}

// Consumer is a gated object for tests.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Consumer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ConsumerSpec `json:"spec,omitempty"`
	// +optional
	Status ConsumerStatus `json:"status,omitempty"`
}

// GetConditions implements conditions.Getter.
func (c *Consumer) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions implements conditions.Setter.
func (c *Consumer) SetConditions(conditions []metav1.Condition) { c.Status.Conditions = conditions }

// GetGates implements gatesapi.Gated.
func (c *Consumer) GetGates() *gatesapi.Gates { return c.Spec.Gates }

// ConsumerList is a list of consumers.
// +kubebuilder:object:root=true
type ConsumerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Consumer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Consumer{}, &ConsumerList{})
}

// GetGatesStatus implements gates.HeldObject.
func (c *Consumer) GetGatesStatus() *gatesapi.GatesStatus { return c.Status.Gates }

// SetGatesStatus implements gates.HeldObject.
func (c *Consumer) SetGatesStatus(st *gatesapi.GatesStatus) { c.Status.Gates = st }

// GetRequestStatus returns the reconcile request handling of the status.
func (c *Consumer) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &c.Status.ReconcileRequestStatus
}

// ConsumerInventory is what a consumer applied, in the owners' inventory shape.
type ConsumerInventory struct {
	// +optional
	Entries []ConsumerRef `json:"entries"`
}

// ConsumerRef is one object of the inventory.
type ConsumerRef struct {
	ID      string `json:"id"`
	Version string `json:"v"`
}
