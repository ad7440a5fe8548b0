package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GateNotificationKind is the kind of GateNotification objects.
const GateNotificationKind = "GateNotification"

// GateEventType is a change of a gate that a GateNotification forwards.
// +kubebuilder:validation:Enum=Opened;Closed;KeeperFailed;ApprovalPending;Approved;Rejected
type GateEventType string

const (
	// GateEventOpened is sent when a gate opens.
	GateEventOpened GateEventType = "Opened"
	// GateEventClosed is sent when a gate closes.
	GateEventClosed GateEventType = "Closed"
	// GateEventKeeperFailed is sent when a GateKeeper of the gate can no longer be evaluated.
	GateEventKeeperFailed GateEventType = "KeeperFailed"
	// GateEventApprovalPending, GateEventApproved and GateEventRejected are reserved for gate
	// approvals; they are accepted in spec.events and sent once approvals exist.
	GateEventApprovalPending GateEventType = "ApprovalPending"
	GateEventApproved        GateEventType = "Approved"
	GateEventRejected        GateEventType = "Rejected"
)

// GateNotificationType is the kind of endpoint a GateNotification posts to.
// +kubebuilder:validation:Enum=generic;generic-hmac;slack;msteams
type GateNotificationType string

const (
	// NotificationGeneric posts the JSON payload of docs/notifications.md.
	NotificationGeneric GateNotificationType = "generic"
	// NotificationGenericHMAC posts the same payload, signed in the X-Signature header.
	NotificationGenericHMAC GateNotificationType = "generic-hmac"
	// NotificationSlack posts a Slack incoming-webhook message.
	NotificationSlack GateNotificationType = "slack"
	// NotificationMSTeams posts a Microsoft Teams (Workflows) Adaptive Card message.
	NotificationMSTeams GateNotificationType = "msteams"
)

// Keys of the Secret named by spec.secretRef.
const (
	// NotificationAddressKey holds the URL the notifications are posted to.
	NotificationAddressKey = "address"
	// NotificationTokenKey holds the HMAC key of generic-hmac.
	NotificationTokenKey = "token"
)

// GateNotificationSpec says which gates' events are forwarded, and where.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) || (has(self.address) && (self.type == 'generic' || self.type == 'generic-hmac'))",message="spec.secretRef is required: it holds the address (spec.address is for generic endpoints only)"
// +kubebuilder:validation:XValidation:rule="!has(self.address) || self.type == 'generic' || self.type == 'generic-hmac'",message="a Slack or Teams webhook URL is a secret: put it in the Secret of spec.secretRef, key 'address'"
// +kubebuilder:validation:XValidation:rule="self.type != 'generic-hmac' || has(self.secretRef)",message="generic-hmac needs spec.secretRef: its Secret holds the HMAC key in 'token'"
type GateNotificationSpec struct {
	// Gates are the names of the gates, in the notification's namespace, whose events are
	// forwarded; `*` is every gate of the namespace. A gate also reports to the notifications its
	// spec.notificationRefs name.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Gates []string `json:"gates,omitempty"`

	// GateSelector selects gates of the notification's namespace by their labels.
	// +optional
	GateSelector *metav1.LabelSelector `json:"gateSelector,omitempty"`

	// Events are the events forwarded. ApprovalPending, Approved and Rejected come with gate
	// approvals: they are accepted now and sent once approvals exist.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=6
	// +listType=set
	Events []GateEventType `json:"events"`

	// Type of the endpoint: `generic` (JSON), `generic-hmac` (JSON signed with the Secret's
	// token), `slack` or `msteams`.
	Type GateNotificationType `json:"type"`

	// SecretRef names a Secret in the notification's namespace: `address` is the URL posted to
	// (a Slack or Teams webhook URL is itself a secret), `token` the HMAC key of generic-hmac.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Address is the URL of a generic endpoint that is not secret; the Secret's `address`
	// takes precedence.
	// +kubebuilder:validation:Pattern="^https?://"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Address string `json:"address,omitempty"`

	// Timeout of each request (default 10s).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops the forwarding of events; those that happen while suspended are not sent.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// GateNotificationDelivery is the outcome of a delivery.
type GateNotificationDelivery struct {
	// Time the delivery ended (succeeded or gave up).
	Time metav1.Time `json:"time"`
	// Event delivered.
	Event GateEventType `json:"event"`
	// Gate the event is about.
	Gate string `json:"gate"`
	// Result is `Succeeded` or `Failed`.
	// +kubebuilder:validation:Enum=Succeeded;Failed
	Result string `json:"result"`
	// Attempts made.
	// +optional
	Attempts int `json:"attempts,omitempty"`
}

// Results of a delivery.
const (
	DeliverySucceeded = "Succeeded"
	DeliveryFailed    = "Failed"
)

// GateNotificationStatus is the observed state of a GateNotification.
type GateNotificationStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: `Ready` is True when the Secret is readable, the address allowed and the last
	// delivery succeeded.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastDelivery is the outcome of the last delivery.
	// +optional
	LastDelivery *GateNotificationDelivery `json:"lastDelivery,omitempty"`

	// LastHandledReconcileAt is the value of the last reconcile.fluxcd.io/requestedAt handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// GateNotification forwards the events of gates to a webhook: generic JSON, Slack or Teams.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".spec.type"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type GateNotification struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GateNotificationSpec   `json:"spec,omitempty"`
	Status GateNotificationStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions (fluxcd/pkg/runtime/conditions.Getter).
func (in *GateNotification) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions (fluxcd/pkg/runtime/conditions.Setter).
func (in *GateNotification) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GateNotificationList is a list of GateNotifications.
// +kubebuilder:object:root=true
type GateNotificationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GateNotification `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GateNotification{}, &GateNotificationList{})
}
