package deletionset

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A set's digest does not depend on the order of its ids; the set lists 50 of them at most.
func TestNew(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Digest([]string{"b", "a"})).To(Equal(Digest([]string{"a", "b"})))
	g.Expect(Digest([]string{"a"})).NotTo(Equal(Digest([]string{"a", "b"})))
	var ids []string
	for i := range 60 {
		ids = append(ids, string(rune('A'+i)))
	}
	set := New(ids, "deletions")
	g.Expect(set.Count).To(BeEquivalentTo(60))
	g.Expect(set.Objects).To(HaveLen(MaxListed))
	g.Expect(set).To(And(HaveField("Gate", "deletions"), HaveField("State", "Pending"), HaveField("Digest", Digest(ids))))
}

// What a gate says of a set: approved only for its digest; rejected or withdrawn only while its
// digest is the pending one; anything else is not requested yet.
func TestRead(t *testing.T) {
	g := NewWithT(t)
	gate := func(state, pending, approved string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
			"approval":   map[string]any{"state": state, "pending": map[string]any{"revision": pending}, "approvedRevision": approved},
			"conditions": []any{map[string]any{"type": "Approved", "message": "word"}},
		}}}
	}
	for _, tc := range []struct {
		gate *unstructured.Unstructured
		want Verdict
	}{
		{gate("Approved", "d1", "d1"), Approved},
		{gate("Approved", "d2", "d2"), Unrequested},
		{gate("Pending", "d1", ""), Pending},
		{gate("Pending", "d2", "d1"), Unrequested},
		{gate("Rejected", "d1", ""), Rejected},
		{gate("Withdrawn", "d1", ""), Rejected},
		{gate("Rejected", "d2", ""), Unrequested},
		{&unstructured.Unstructured{Object: map[string]any{}}, Unrequested},
	} {
		got, _ := Read(tc.gate, "d1")
		g.Expect(got).To(Equal(tc.want), "%v", tc.gate.Object)
	}
	_, word := Read(gate("Pending", "d1", ""), "d1")
	g.Expect(word).To(Equal("word"))
}
