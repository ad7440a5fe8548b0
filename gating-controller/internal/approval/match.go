package approval

// Rule is one approval rule: Minimum approvals from approvers for whom Fits is true.
type Rule struct {
	Name    string
	Minimum int
	Fits    func(approver string) bool
}

// Assignment is the result of Match: the approvers counted toward each rule (in the order of the
// rules), and the approvers left over (they count toward the total, not toward a rule).
type Assignment struct {
	ByRule   [][]string
	Leftover []string
}

// Satisfied says whether every rule has its minimum.
func (a Assignment) Satisfied(rules []Rule) bool {
	for i, r := range rules {
		if len(a.ByRule[i]) < r.Minimum {
			return false
		}
	}
	return true
}

// Match assigns approvers to the rules' slots (a rule of minimum m has m slots) by a maximum
// bipartite matching, found with augmenting paths (Kuhn's algorithm, O(V·E)): an approver takes
// a free slot of a rule that fits, or takes one held by another approver who can move to a
// different free slot. So an approver who fits two rules never keeps a third rule from being met
// when some assignment meets it; a greedy "first rule that fits" assignment can. Approvers are
// taken in the order given, so the result is deterministic.
func Match(rules []Rule, approvers []string) Assignment {
	type slot struct{ rule int }
	var slots []slot
	for i, r := range rules {
		for range r.Minimum {
			slots = append(slots, slot{rule: i})
		}
	}
	holder := make([]int, len(slots)) // approver index holding each slot, -1 when free
	for i := range holder {
		holder[i] = -1
	}
	var augment func(a int, seen []bool) bool
	augment = func(a int, seen []bool) bool {
		for s := range slots {
			if seen[s] || !rules[slots[s].rule].Fits(approvers[a]) {
				continue
			}
			seen[s] = true
			if holder[s] == -1 || augment(holder[s], seen) {
				holder[s] = a
				return true
			}
		}
		return false
	}
	matched := make([]bool, len(approvers))
	for a := range approvers {
		matched[a] = augment(a, make([]bool, len(slots)))
	}
	out := Assignment{ByRule: make([][]string, len(rules))}
	// Slots in rule order; within a rule, approvers in the order given.
	byRule := make([][]int, len(rules))
	for s, a := range holder {
		if a != -1 {
			byRule[slots[s].rule] = append(byRule[slots[s].rule], a)
		}
	}
	for i, as := range byRule {
		sortInts(as)
		for _, a := range as {
			out.ByRule[i] = append(out.ByRule[i], approvers[a])
		}
	}
	for a, ok := range matched {
		if !ok {
			out.Leftover = append(out.Leftover, approvers[a])
		}
	}
	return out
}

func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
