package v1beta3

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// AlertKind is the kind of Alert objects.
const AlertKind = "Alert"

// The values of spec.eventSeverity.
const (
	EventSeverityInfo  = "info"
	EventSeverityError = "error"
)

// AlertSpec says which events go to a Provider.
type AlertSpec struct {
	// ProviderRef names the Provider, in the Alert's namespace, the events go to.
	// +required
	ProviderRef meta.LocalObjectReference `json:"providerRef"`

	// EventSeverity is the least severe event sent: info sends every event, error only errors.
	// +kubebuilder:validation:Enum=info;error
	// +kubebuilder:default:=info
	// +optional
	EventSeverity string `json:"eventSeverity,omitempty"`

	// EventSources are the objects whose events are sent: by kind and name (`*` for every object
	// of the kind, narrowed by matchLabels), in the Alert's namespace unless one is given.
	// +required
	EventSources []notificationv1.CrossNamespaceObjectReference `json:"eventSources"`

	// InclusionList are Go regular expressions: when set, only events whose message matches one
	// of them are sent.
	// +optional
	InclusionList []string `json:"inclusionList,omitempty"`

	// EventMetadata is added to the metadata of every event sent; a key the event has already
	// keeps the event's value.
	// +optional
	EventMetadata map[string]string `json:"eventMetadata,omitempty"`

	// ExclusionList are Go regular expressions: events whose message matches one of them are not
	// sent.
	// +optional
	ExclusionList []string `json:"exclusionList,omitempty"`

	// Summary is added to the metadata of every event sent, as `summary`.
	// Deprecated: use EventMetadata.
	//
	// +kubebuilder:validation:MaxLength:=255
	// +optional
	// +deprecated
	Summary string `json:"summary,omitempty"`

	// Suspend stops the sending of events until it is unset.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// +kubebuilder:storageversion
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"

// Alert sends the events of objects to a Provider.
type Alert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AlertSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// AlertList is a list of Alerts.
type AlertList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Alert `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Alert{}, &AlertList{})
}
