package testapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gates"
)

// ConsumerSpec waits on gates.
type ConsumerSpec struct {
	// +optional
	Gates *gates.Gates `json:"gates,omitempty"`
}

// Consumer is a gated object for tests.
// +kubebuilder:object:root=true
type Consumer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ConsumerSpec `json:"spec,omitempty"`
}

// GetGates implements gates.Gated.
func (c *Consumer) GetGates() *gates.Gates { return c.Spec.Gates }

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
