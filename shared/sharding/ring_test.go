package sharding

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// Every slot has an owner, no member holds more than its bound, and the assignment does not
// depend on the order the members are listed in.
func TestAssignIsBalancedWithinTheBound(t *testing.T) {
	g := NewWithT(t)
	for n := 1; n <= 7; n++ {
		members := names(n)
		owners := Assign(members, DefaultSlots, DefaultLoad)
		g.Expect(owners).To(HaveLen(DefaultSlots))
		held := map[string]int{}
		for _, o := range owners {
			g.Expect(o).NotTo(BeEmpty())
			held[o]++
		}
		bound := (DefaultSlots*5/4 + n - 1) / n
		for _, m := range members {
			g.Expect(held[m]).To(BeNumerically("<=", bound), "%d members: %s", n, m)
			g.Expect(held[m]).To(BeNumerically(">=", DefaultSlots/n/2), "%d members: %s holds too few", n, m)
		}
		reversed := append([]string(nil), members...)
		for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
			reversed[i], reversed[j] = reversed[j], reversed[i]
		}
		g.Expect(Assign(reversed, DefaultSlots, DefaultLoad)).To(Equal(owners))
	}
}

// A member joining or leaving moves about 1/N of the slots: at most 1.5/N of them.
func TestAssignMovesAboutOneNth(t *testing.T) {
	g := NewWithT(t)
	for n := 2; n <= 8; n++ {
		before := Assign(names(n), DefaultSlots, DefaultLoad)
		after := Assign(names(n+1), DefaultSlots, DefaultLoad)
		moved := 0
		for s := range before {
			if before[s] != after[s] {
				moved++
			}
		}
		share := float64(moved) / DefaultSlots
		t.Logf("%d -> %d members: %.3f of the slots moved (1/N = %.3f)", n, n+1, share, 1/float64(n+1))
		g.Expect(share).To(BeNumerically("<=", 1.5/float64(n+1)), "join of member %d", n+1)
		g.Expect(share).To(BeNumerically(">=", 0.5/float64(n+1)), "the new member got its share")
	}
}

func TestRingIDNamesTheSet(t *testing.T) {
	g := NewWithT(t)
	g.Expect(RingID([]string{"a", "b"})).To(Equal(RingID([]string{"b", "a"})))
	g.Expect(RingID([]string{"a", "b"})).NotTo(Equal(RingID([]string{"a", "b", "c"})))
	g.Expect(SlotOf("default/app", DefaultSlots)).To(Equal(SlotOf("default/app", DefaultSlots)))
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("source-controller-%d", i)
	}
	return out
}
