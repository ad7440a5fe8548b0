package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
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

// Annotations of a Gate besides the request times of shared/gates.
const (
	// OpenReasonAnnotation is the message of an open request.
	OpenReasonAnnotation = gatesapi.OpenReasonAnnotation
	// CloseReasonAnnotation is the message of a close request.
	CloseReasonAnnotation = "close.gate.fluxcd.io/reason"
	// OpenRequestedByAnnotation names who asked to open the gate.
	OpenRequestedByAnnotation = gatesapi.OpenRequestedByAnnotation
	// CloseRequestedByAnnotation names who asked to close the gate.
	CloseRequestedByAnnotation = "close.gate.fluxcd.io/requestedBy"
	// OpenDurationAnnotation overrides spec.window for one open request (a Go duration, `2h`).
	OpenDurationAnnotation = gatesapi.OpenDurationAnnotation
	// CloseDurationAnnotation overrides spec.window for one close request.
	CloseDurationAnnotation = "close.gate.fluxcd.io/duration"
)

// GateSpec defines the default state of a gate and how long a manual request lasts.
// +kubebuilder:validation:XValidation:rule="!(has(self.closed) && has(self.default))",message="set either spec.default or spec.closed, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.approval) || (has(self.default) && self.default == 'closed') || (has(self.closed) && self.closed)",message="a gate with spec.approval is closed by default: set spec.default: closed"
// +kubebuilder:validation:XValidation:rule="!has(self.promotion) || (has(self.default) && self.default == 'closed') || (has(self.closed) && self.closed)",message="a gate with spec.promotion is closed by default: set spec.default: closed"
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
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.window must be longer than 0s"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`

	// Interval at which the gate is re-evaluated when nothing else triggers it (default 1h; the
	// gate also wakes up exactly at its next transition).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Receiver lets HTTP clients open or close the gate through the gating-controller's webhook
	// receiver; unset, the receiver answers 404 for this gate.
	// +optional
	Receiver *GateReceiver `json:"receiver,omitempty"`

	// NotificationRefs name GateNotifications of the gate's namespace that report on this gate,
	// even when their own spec.gates and spec.gateSelector do not select it.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	NotificationRefs []meta.LocalObjectReference `json:"notificationRefs,omitempty"`

	// Approval holds the gate closed until the responses (GateApprovals) to an open request
	// satisfy its rules; see docs/gate.md, "Approvals".
	// +optional
	Approval *GateApprovalSpec `json:"approval,omitempty"`

	// Promotion opens the gate for the revision that other objects (staging) have applied and
	// kept Ready for a while; see docs/gate.md, "Promotion". It needs spec.default: closed.
	// +optional
	Promotion *GatePromotion `json:"promotion,omitempty"`

	// Checks hold the gate closed while one of their objects is missing or not ready; see
	// docs/gate.md, "Checks".
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Checks []GateCheck `json:"checks,omitempty"`

	// ServiceAccountName is the account, in the gate's namespace, that the objects of
	// spec.promotion and spec.checks are read as. Unset, they are read with the controller's
	// permissions, in the gate's namespace only.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// GateReceiver authenticates the requests of the webhook receiver for one gate.
type GateReceiver struct {
	// SecretRef names a Secret in the gate's namespace whose `token` key is the bearer token of
	// the requests, and the key of their HMAC-SHA256 signature.
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// ReceiverTokenKey is the key of the receiver's token in the Secret of spec.receiver.secretRef.
const ReceiverTokenKey = "token"

// DefaultState is the state the gate returns to when no request or schedule applies.
func (in *GateSpec) DefaultState() GateState {
	switch {
	case in.Closed != nil && *in.Closed:
		return GateClosed
	case in.Default != "":
		return in.Default
	default:
		return GateOpened
	}
}

// GateTransition is one change of state in a gate's history.
type GateTransition struct {
	// Time of the change.
	Time metav1.Time `json:"time"`
	// Opened is the state the gate changed to.
	Opened bool `json:"opened"`
	// Cause is `default`, `request` or `gatekeeper/<name>`.
	Cause string `json:"cause"`
	// Reason is the message of the request or schedule that caused the change.
	// +optional
	Reason string `json:"reason,omitempty"`
	// RequestedBy names who made the request.
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// ApprovedBy names the approvers of an `approval` cause.
	// +optional
	ApprovedBy []string `json:"approvedBy,omitempty"`
}

// GateRequest is the last open or close request handled; it is in force from status.requestedAt
// until status.resetToDefaultAt (for ever when that is unset).
type GateRequest struct {
	// State the request asked for.
	State GateState `json:"state"`
	// Reason given with the request.
	// +optional
	Reason string `json:"reason,omitempty"`
	// RequestedBy names who made the request.
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// ApprovedBy names the approvers of an open request that spec.approval held.
	// +optional
	ApprovedBy []string `json:"approvedBy,omitempty"`
	// Revision is the revision an approved open request is for: the gate it opens is opened for
	// that revision only.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// GateStatus is the observed state of a gate.
type GateStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: `Opened` (True when the gate is opened), `Ready` (the cause of the state) and
	// `KeeperFailed` (True while a GateKeeper of the gate cannot be evaluated).
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// RequestedAt is the time of the open or close request in force.
	// +optional
	RequestedAt *metav1.Time `json:"requestedAt,omitempty"`

	// Request is the open or close request in force, or the last one.
	// +optional
	Request *GateRequest `json:"request,omitempty"`

	// ResetToDefaultAt is when the request in force expires.
	// +optional
	ResetToDefaultAt *metav1.Time `json:"resetToDefaultAt,omitempty"`

	// NextTransitionAt is when the gate will next change state by itself.
	// +optional
	NextTransitionAt *metav1.Time `json:"nextTransitionAt,omitempty"`

	// LastHandledOpenAt is the value of the last open request annotation handled.
	// +optional
	LastHandledOpenAt string `json:"lastHandledOpenAt,omitempty"`

	// LastHandledCloseAt is the value of the last close request annotation handled.
	// +optional
	LastHandledCloseAt string `json:"lastHandledCloseAt,omitempty"`

	// LastHandledReconcileAt is the value of the last reconcile.fluxcd.io/requestedAt handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// History holds the last 10 changes of state, newest first.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	History []GateTransition `json:"history,omitempty"`

	// Approval is the approval of the last open request of a gate with spec.approval.
	// +optional
	Approval *GateApprovalStatus `json:"approval,omitempty"`

	// OpenedForRevision is set while the gate is opened by an approved open request that named a
	// revision: the gate is opened for that revision only, and holds the objects whose candidate
	// revision is another one (docs/gate.md, "Revisions").
	// +optional
	OpenedForRevision string `json:"openedForRevision,omitempty"`

	// Promotion is where spec.promotion stands: the revision promoted, the one soaking.
	// +optional
	Promotion *GatePromotionStatus `json:"promotion,omitempty"`

	// Checks is the first of spec.checks that holds the gate closed, and why; empty when they
	// all pass.
	// +optional
	Checks string `json:"checks,omitempty"`
}

// Gate holds the objects that refer to it in `spec.gates` while it is closed.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Opened",type="string",JSONPath=".status.conditions[?(@.type==\"Opened\")].status"
// +kubebuilder:printcolumn:name="Next",type="string",JSONPath=".status.nextTransitionAt"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Opened\")].message",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type Gate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GateSpec   `json:"spec,omitempty"`
	Status GateStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions (fluxcd/pkg/runtime/conditions.Getter).
func (in *Gate) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions (fluxcd/pkg/runtime/conditions.Setter).
func (in *Gate) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

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
