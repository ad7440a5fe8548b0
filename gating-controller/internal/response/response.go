// Package response makes a GateApproval in its author's own name, as `kubectl gate approve|reject`,
// the dashboard and the gate receiver's /approve and /reject write it: the identity is what the
// API server says the author is (a SelfSubjectReview), never what the author claims, so that the
// gateapproval-identity admission policy accepts it (docs/gateapproval.md).
package response

import (
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// New is the response of who to the gate, to be created with who's own credentials.
func New(gate *gatingv1.Gate, who authenticationv1.UserInfo, decision gatingv1.GateDecision, reason, revision string) *gatingv1.GateApproval {
	return &gatingv1.GateApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: gate.Namespace, GenerateName: gate.Name + "-"},
		Spec: gatingv1.GateApprovalResponseSpec{
			Gate: gate.Name, Decision: decision, Reason: reason, Revision: revision,
			User: who.Username, Groups: who.Groups,
		},
	}
}

// PendingRevision is the revision of the gate's open request pending approval, if any: the
// revision a response is for unless its author names another, since the gate counts only
// responses for that revision. An open request written to the gate's annotations that the
// controller has not made pending yet is the one a response answers (`kubectl gate open` then
// `kubectl gate approve` at once).
func PendingRevision(gate *gatingv1.Gate) string {
	st := gate.Status.Approval
	if at, err := time.Parse(time.RFC3339, gate.Annotations[gatesapi.OpenRequestAnnotation]); err == nil && gate.Spec.Approval != nil &&
		(st == nil || st.Pending == nil || st.Pending.RequestedAt.Time.Before(at)) {
		return gate.Annotations[gatingv1.OpenRevisionAnnotation]
	}
	if st != nil && st.Pending != nil && st.State == gatingv1.ApprovalPending {
		return st.Pending.Revision
	}
	return ""
}
