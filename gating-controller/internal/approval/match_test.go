package approval

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

func members(names ...string) func(string) bool {
	return func(a string) bool { return slices.Contains(names, a) }
}

// greedy is the assignment the matching replaces: each approver, in order, to the first rule
// that fits and still needs approvals.
func greedy(rules []Rule, approvers []string) Assignment {
	out := Assignment{ByRule: make([][]string, len(rules))}
	for _, a := range approvers {
		placed := false
		for i, r := range rules {
			if r.Fits(a) && len(out.ByRule[i]) < r.Minimum {
				out.ByRule[i] = append(out.ByRule[i], a)
				placed = true
				break
			}
		}
		if !placed {
			out.Leftover = append(out.Leftover, a)
		}
	}
	return out
}

func TestMatch(t *testing.T) {
	for name, tc := range map[string]struct {
		rules     []Rule
		approvers []string
		byRule    [][]string
		leftover  []string
		satisfied bool
	}{
		// The deployment that waits for ever under one-rule-per-approver-first-fit: ana fits both
		// rules and approves first; bo fits only "sre".
		"an approver who fits two rules does not starve the other": {
			rules: []Rule{
				{Name: "sre", Minimum: 1, Fits: members("ana", "bo")},
				{Name: "security", Minimum: 1, Fits: members("ana", "cy")},
			},
			approvers: []string{"ana", "bo"},
			byRule:    [][]string{{"bo"}, {"ana"}},
			satisfied: true,
		},
		"a chain of moves": {
			rules: []Rule{
				{Name: "a", Minimum: 1, Fits: members("x", "y")},
				{Name: "b", Minimum: 1, Fits: members("x", "z", "y")},
				{Name: "c", Minimum: 1, Fits: members("y")},
			},
			approvers: []string{"x", "y", "z"},
			byRule:    [][]string{{"x"}, {"z"}, {"y"}},
			satisfied: true,
		},
		"too few approvers": {
			rules: []Rule{
				{Name: "sre", Minimum: 2, Fits: members("ana", "bo")},
				{Name: "security", Minimum: 1, Fits: members("ana")},
			},
			approvers: []string{"ana", "bo"},
			byRule:    [][]string{{"ana", "bo"}, nil},
			satisfied: false,
		},
		"extra approvers are left over": {
			rules:     []Rule{{Name: "sre", Minimum: 1, Fits: members("ana", "bo")}},
			approvers: []string{"ana", "bo", "eve"},
			byRule:    [][]string{{"ana"}},
			leftover:  []string{"bo", "eve"},
			satisfied: true,
		},
		"no rules": {
			approvers: []string{"ana"},
			byRule:    [][]string{},
			leftover:  []string{"ana"},
			satisfied: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := Match(tc.rules, tc.approvers)
			g.Expect(got.ByRule).To(Equal(tc.byRule))
			g.Expect(got.Leftover).To(Equal(tc.leftover))
			g.Expect(got.Satisfied(tc.rules)).To(Equal(tc.satisfied))
		})
	}
}

// The same input under a greedy assignment: ana takes "sre", bo fits nothing left, and
// "security" waits for an approver who may never come.
func TestGreedyAssignmentWaitsForEver(t *testing.T) {
	g := NewWithT(t)
	rules := []Rule{
		{Name: "sre", Minimum: 1, Fits: members("ana", "bo")},
		{Name: "security", Minimum: 1, Fits: members("ana", "cy")},
	}
	got := greedy(rules, []string{"ana", "bo"})
	g.Expect(got.ByRule).To(Equal([][]string{{"ana"}, nil}))
	g.Expect(got.Satisfied(rules)).To(BeFalse())
	g.Expect(Match(rules, []string{"ana", "bo"}).Satisfied(rules)).To(BeTrue())
}
