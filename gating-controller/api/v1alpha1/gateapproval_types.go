package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// GateApprovalKind is the kind of GateApproval objects.
const GateApprovalKind = "GateApproval"

// OpenRevisionAnnotation names the revision an open request is for (recorded in
// status.approval.pending.revision). On a gate with spec.approval it scopes the approval: only
// responses for that revision count, and the approved gate is opened for that revision only
// (status.openedForRevision); see docs/gate.md, "Revisions".
const OpenRevisionAnnotation = gatesapi.OpenRevisionAnnotation

// GateApprovalSpec is the approval rules of a gate (Gate spec.approval): the gate opens on an
// open request only once the responses to it satisfy every rule and the total.
type GateApprovalSpec struct {
	// Required is the number of distinct approvals needed in all; default: the sum of the rules'
	// minimums, at least 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Required *int32 `json:"required,omitempty"`

	// Rules each need approvals from their approvers; one approver counts toward one rule only.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Rules []GateApprovalRule `json:"rules,omitempty"`

	// PreventSelfApproval refuses the approval of the user who requested the opening and, for a
	// request of one revision, of its authors where a source's artifact names them (a user
	// named by their e-mail address, alone or after a prefix such as "oidc:").
	// +optional
	PreventSelfApproval bool `json:"preventSelfApproval,omitempty"`

	// Expiry is how long an approval counts after the gating-controller recorded it; unset, it
	// counts until the request is decided.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Expiry *metav1.Duration `json:"expiry,omitempty"`
}

// GateApprovalRule is one rule: Minimum approvals from its approvers.
type GateApprovalRule struct {
	// Name of the rule, shown in the status.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Approvers whose approval counts toward the rule.
	Approvers GateApprovers `json:"approvers"`
	// Minimum is the number of approvals the rule needs (default 1).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	Minimum int32 `json:"minimum,omitempty"`
}

// GateApprovers are users and groups, as the API server authenticates them.
// +kubebuilder:validation:XValidation:rule="(has(self.users) ? size(self.users) : 0) + (has(self.groups) ? size(self.groups) : 0) > 0",message="a rule needs at least one user or group"
type GateApprovers struct {
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Users []string `json:"users,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// RequiredApprovals is spec.approval.required, or the sum of the rules' minimums, at least 1.
func (in *GateApprovalSpec) RequiredApprovals() int {
	if in.Required != nil {
		return int(*in.Required)
	}
	n := 0
	for _, r := range in.Rules {
		n += int(r.Minimum)
	}
	return max(n, 1)
}

// GateApprovalState is the state of the open request pending approval.
// +kubebuilder:validation:Enum=Pending;Approved;Rejected;Withdrawn
type GateApprovalState string

const (
	ApprovalPending   GateApprovalState = "Pending"
	ApprovalApproved  GateApprovalState = "Approved"
	ApprovalRejected  GateApprovalState = "Rejected"
	ApprovalWithdrawn GateApprovalState = "Withdrawn"
)

// GateApprovalStatus is the approval of the last open request (Gate status.approval).
type GateApprovalStatus struct {
	// Pending is the open request the approvals are for.
	// +optional
	Pending *GatePendingRequest `json:"pending,omitempty"`
	// State of that request: Pending, Approved, Rejected or Withdrawn (by a later close request).
	// +optional
	State GateApprovalState `json:"state,omitempty"`
	// Rules is the progress of each rule.
	// +optional
	Rules []GateRuleProgress `json:"rules,omitempty"`
	// ApprovedBy are the approvers counted, toward a rule or the total.
	// +optional
	ApprovedBy []string `json:"approvedBy,omitempty"`
	// ApprovedRevision is the revision of the approved request, when it named one: the gate is
	// opened for that revision only.
	// +optional
	ApprovedRevision string `json:"approvedRevision,omitempty"`
	// Responses are the last 50 responses recorded, newest first.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Responses []GateResponse `json:"responses,omitempty"`
}

// GatePendingRequest is an open request waiting for approval.
type GatePendingRequest struct {
	// RequestedBy is the user who asked to open the gate.
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// RequestedAt is the time of the open request.
	RequestedAt metav1.Time `json:"requestedAt"`
	// Reason given with the request.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Revision the request is for (open.gate.fluxcd.io/revision): only responses for this
	// revision count, and once approved the gate is opened for it only.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Authors of Revision, as a source in the gate's namespace whose artifact is that revision
	// tells them (its artifact metadata): under spec.approval.preventSelfApproval they cannot
	// approve it either.
	// +optional
	Authors []string `json:"authors,omitempty"`
	// Duration overrides spec.window once the request is approved.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// GateRuleProgress is how far one rule is.
type GateRuleProgress struct {
	Name    string `json:"name"`
	Minimum int32  `json:"minimum"`
	// ApprovedBy are the approvers counted toward this rule.
	// +optional
	ApprovedBy []string `json:"approvedBy,omitempty"`
}

// GateResponse is one GateApproval as the gating-controller recorded it.
type GateResponse struct {
	// Name of the GateApproval.
	Name string `json:"name"`
	// User who responded.
	User string `json:"user"`
	// Decision is approve or reject.
	Decision GateDecision `json:"decision"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// Revision the response is for.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Time the gating-controller recorded the response.
	Time metav1.Time `json:"time"`
	// Request is the requestedAt of the pending request the response was recorded for; unset when
	// none was pending.
	// +optional
	Request *metav1.Time `json:"request,omitempty"`
	// Counted: the response counts (an approval toward the rules, or the rejection).
	Counted bool `json:"counted"`
	// Refused says why the response does not count.
	// +optional
	Refused string `json:"refused,omitempty"`
}

// GateDecision is a response to an open request.
// +kubebuilder:validation:Enum=approve;reject
type GateDecision string

const (
	DecisionApprove GateDecision = "approve"
	DecisionReject  GateDecision = "reject"
)

// GateApprovalResponseSpec is one response to a gate's open request. The identity fields must be
// the caller's own (the gateapproval-identity admission policy); the spec cannot change.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a GateApproval cannot be changed: create a new one"
type GateApprovalResponseSpec struct {
	// Gate names the Gate of the namespace.
	// +kubebuilder:validation:MinLength=1
	Gate string `json:"gate"`
	// Decision is approve or reject.
	Decision GateDecision `json:"decision"`
	// Reason of the response.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
	// Revision the response is for: when the pending request names a revision, only responses
	// for that same revision count.
	// +optional
	Revision string `json:"revision,omitempty"`
	// User is the responder, as the API server authenticated them.
	// +kubebuilder:validation:MinLength=1
	User string `json:"user"`
	// Groups of the responder, as the API server authenticated them.
	// +optional
	Groups []string `json:"groups,omitempty"`
}

// GateApproval is one response (approve or reject) to the open request of a Gate with
// spec.approval.
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Gate",type="string",JSONPath=".spec.gate"
// +kubebuilder:printcolumn:name="Decision",type="string",JSONPath=".spec.decision"
// +kubebuilder:printcolumn:name="User",type="string",JSONPath=".spec.user"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".spec.reason",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type GateApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GateApprovalResponseSpec `json:"spec"`
}

// GateApprovalList is a list of GateApprovals.
// +kubebuilder:object:root=true
type GateApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GateApproval `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GateApproval{}, &GateApprovalList{})
}
