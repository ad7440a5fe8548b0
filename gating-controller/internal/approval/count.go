package approval

import (
	"fmt"
	"slices"
	"strings"
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Responder is what Count reads of the GateApproval behind a recorded response: the groups its
// user belongs to. A response whose GateApproval is gone has no Responder.
type Responder struct {
	Groups []string
}

// Counted is the outcome of Count.
type Counted struct {
	// Approved: the responses satisfy spec.approval; status.approval says Approved, and the
	// request is the controller's to apply.
	Approved bool
	// Next is when a counted approval expires, if one may (nil once decided).
	Next *time.Time
}

// Count decides the pending request of a (Pending(a) must hold) from the responses recorded
// for it (in a.Responses, newest first), whose GateApprovals are responders, by name: it marks
// each response counted or refused and why, and sets the state, the rules' progress and the
// approvers. A rejection that counts rejects the request; otherwise the approvals that count
// are matched to the rules.
func Count(spec *gatingv1.GateApprovalSpec, a *gatingv1.GateApprovalStatus, responders map[string]*Responder, now time.Time) Counted {
	round := roundOf(a)
	rules := rulesOf(spec, a, round, responders)
	var out Counted
	var approvers []string
	var rejection *gatingv1.GateResponse
	for _, e := range round {
		e.Counted, e.Refused = false, ""
		switch {
		case responders[e.Name] == nil:
			e.Refused = "the GateApproval was deleted"
		case a.Pending.Revision != "" && e.Revision != a.Pending.Revision:
			e.Refused = revisionMismatch(e.Revision, a.Pending.Revision)
		case e.Decision == gatingv1.DecisionApprove && spec.PreventSelfApproval && e.User == a.Pending.RequestedBy:
			e.Refused = "self-approval: " + e.User + " requested the opening and spec.approval.preventSelfApproval is set"
		case e.Decision == gatingv1.DecisionApprove && spec.PreventSelfApproval && AuthoredBy(e.User, a.Pending.Authors):
			e.Refused = "self-approval: " + e.User + " authored revision '" + a.Pending.Revision +
				"' and spec.approval.preventSelfApproval is set"
		case !fitsAny(rules, e.User):
			e.Refused = "not an approver of any rule of spec.approval"
		case e.Decision == gatingv1.DecisionReject:
			e.Counted = true
			if rejection == nil {
				rejection = e
			}
		case spec.Expiry != nil && !now.Before(e.Time.Add(spec.Expiry.Duration)):
			e.Refused = fmt.Sprintf("expired at %s (spec.approval.expiry %s)",
				e.Time.Add(spec.Expiry.Duration).UTC().Format(time.RFC3339), spec.Expiry.Duration)
		case slices.Contains(approvers, e.User):
			e.Refused = "a second approval of " + e.User + " counts once"
		default:
			e.Counted = true
			approvers = append(approvers, e.User)
			if spec.Expiry != nil {
				t := e.Time.Add(spec.Expiry.Duration)
				if out.Next == nil || t.Before(*out.Next) {
					out.Next = &t
				}
			}
		}
	}
	if rejection != nil {
		a.State = gatingv1.ApprovalRejected
		for _, e := range round {
			if e.Decision == gatingv1.DecisionApprove && e.Counted {
				e.Counted, e.Refused = false, "the request was rejected by "+rejection.User
			}
		}
		a.Rules, a.ApprovedBy = nil, nil
		return Counted{}
	}

	assigned := Match(rules, approvers)
	a.Rules = make([]gatingv1.GateRuleProgress, len(spec.Rules))
	for i, rule := range spec.Rules {
		a.Rules[i] = gatingv1.GateRuleProgress{Name: rule.Name, Minimum: rule.Minimum, ApprovedBy: assigned.ByRule[i]}
	}
	a.ApprovedBy = approvers
	if !assigned.Satisfied(rules) || len(approvers) < spec.RequiredApprovals() {
		return out
	}
	a.State, a.ApprovedRevision = gatingv1.ApprovalApproved, a.Pending.Revision
	return Counted{Approved: true}
}

// roundOf returns the responses recorded for the pending request, oldest first.
func roundOf(a *gatingv1.GateApprovalStatus) []*gatingv1.GateResponse {
	var round []*gatingv1.GateResponse
	for i := len(a.Responses) - 1; i >= 0; i-- {
		if e := &a.Responses[i]; e.Request != nil && e.Request.Equal(&a.Pending.RequestedAt) {
			round = append(round, e)
		}
	}
	return round
}

// rulesOf are the rules of spec, their approvers' groups those that each user's first
// response of the round names.
func rulesOf(spec *gatingv1.GateApprovalSpec, a *gatingv1.GateApprovalStatus, round []*gatingv1.GateResponse, responders map[string]*Responder) []Rule {
	groups := map[string][]string{}
	for _, e := range round {
		if r := responders[e.Name]; r != nil {
			if _, ok := groups[e.User]; !ok {
				groups[e.User] = r.Groups
			}
		}
	}
	rules := make([]Rule, len(spec.Rules))
	for i, rule := range spec.Rules {
		rules[i] = Rule{Name: rule.Name, Minimum: int(rule.Minimum), Fits: fits(rule.Approvers, groups)}
	}
	return rules
}

// fitsAny: user may approve, by some rule (anyone may, without rules).
func fitsAny(rules []Rule, user string) bool {
	if len(rules) == 0 {
		return true
	}
	for _, rule := range rules {
		if rule.Fits(user) {
			return true
		}
	}
	return false
}

func fits(a gatingv1.GateApprovers, groups map[string][]string) func(string) bool {
	return func(user string) bool {
		if slices.Contains(a.Users, user) {
			return true
		}
		for _, g := range groups[user] {
			if slices.Contains(a.Groups, g) {
				return true
			}
		}
		return false
	}
}

// AuthoredBy: user is one of the authors, named by their e-mail address as clusters that
// authenticate users by OIDC name them, alone or after a prefix ("oidc:ana@example.com").
func AuthoredBy(user string, authors []string) bool {
	u := strings.ToLower(user)
	for _, a := range authors {
		if u == a || strings.HasSuffix(u, ":"+a) {
			return true
		}
	}
	return false
}

// revisionMismatch is why a response does not count toward an open request for one revision.
func revisionMismatch(response, pending string) string {
	if response == "" {
		return "the response names no revision; the open request is for revision '" + pending + "'"
	}
	return "the response is for revision '" + response + "'; the open request is for revision '" + pending + "'"
}

// Warned: a refusal the responder should hear of, in an event (self-approval, a response for
// another revision): the others are the ordinary course of a round.
func Warned(refused string) bool {
	return strings.HasPrefix(refused, "self-approval") || strings.HasPrefix(refused, "the response ")
}
