package approval

import (
	"fmt"
	"slices"
	"strings"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// RequestName is "open request of alice for revision main@sha1:…".
func RequestName(p *gatingv1.GatePendingRequest) string {
	s := "open request"
	if p.RequestedBy != "" {
		s += " of " + p.RequestedBy
	}
	if p.Revision != "" {
		s += " for revision " + p.Revision
	}
	return s
}

// Rejection says who rejected the pending request, and why: "rejected by ana: not on a
// Friday".
func Rejection(a *gatingv1.GateApprovalStatus) string {
	for i := len(a.Responses) - 1; i >= 0; i-- {
		e := a.Responses[i]
		if e.Decision == gatingv1.DecisionReject && e.Counted && e.Request != nil && e.Request.Equal(&a.Pending.RequestedAt) {
			msg := "rejected by " + e.User
			if e.Reason != "" {
				msg += ": " + e.Reason
			}
			return msg
		}
	}
	return "rejected"
}

// Waiting says what the pending request waits for: "waiting for 1 more approval from rule
// sre (ana, bo); 1 of 2 in all".
func Waiting(spec *gatingv1.GateApprovalSpec, a *gatingv1.GateApprovalStatus) string {
	var parts []string
	for i, rule := range spec.Rules {
		have := 0
		if i < len(a.Rules) {
			have = len(a.Rules[i].ApprovedBy)
		}
		if missing := int(rule.Minimum) - have; missing > 0 {
			parts = append(parts, fmt.Sprintf("%d more %s from rule %s (%s)", missing, plural(missing), rule.Name, approversList(rule.Approvers)))
		}
	}
	required := spec.RequiredApprovals()
	if len(parts) == 0 {
		missing := required - len(a.ApprovedBy)
		parts = append(parts, fmt.Sprintf("%d more %s", missing, plural(missing)))
	}
	return fmt.Sprintf("waiting for %s; %d of %d in all", strings.Join(parts, " and "), len(a.ApprovedBy), required)
}

// Note is what the Ready condition adds about a pending or rejected open request.
func Note(spec *gatingv1.GateApprovalSpec, a *gatingv1.GateApprovalStatus) string {
	if spec == nil || a == nil || a.Pending == nil {
		return ""
	}
	switch a.State {
	case gatingv1.ApprovalPending:
		return "; the " + RequestName(a.Pending) + " is pending approval: " + Waiting(spec, a)
	case gatingv1.ApprovalRejected:
		return "; the " + RequestName(a.Pending) + " was " + Rejection(a)
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return "approval"
	}
	return "approvals"
}

func approversList(a gatingv1.GateApprovers) string {
	names := slices.Clone(a.Users)
	for _, g := range a.Groups {
		names = append(names, "group "+g)
	}
	return strings.Join(names, ", ")
}
