package gates_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

func TestEvaluate(t *testing.T) {
	ns := env.Namespace(t)
	other := env.Namespace(t)
	freezeEnd := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	createGate(t, ns, "open-a", opened())
	createGate(t, ns, "open-b", opened())
	createGate(t, ns, "closed-a", closed())
	createGate(t, ns, "change-freeze", closedUntil(freezeEnd))
	createGate(t, ns, "new", gateState{})
	createGate(t, other, "shared", opened())

	cases := []struct {
		name    string
		gates   *gatesapi.Gates
		open    bool
		message string
	}{
		{name: "no gates", gates: nil, open: true},
		{name: "empty refs", gates: &gatesapi.Gates{Require: gatesapi.RequireAll}, open: true},
		{name: "all opened", gates: &gatesapi.Gates{Refs: []string{"open-a", "open-b"}}, open: true},
		{
			name:    "all with one closed until a known time",
			gates:   &gatesapi.Gates{Refs: []string{"open-a", "change-freeze"}},
			message: "Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed until 2026-12-01T00:00:00Z.",
		},
		{
			name:  "all with two closed",
			gates: &gatesapi.Gates{Require: gatesapi.RequireAll, Refs: []string{"closed-a", "open-a", "change-freeze"}},
			message: "Reconciliation is blocked as gate '" + ns + "/closed-a' is closed and gate '" + ns +
				"/change-freeze' is closed until 2026-12-01T00:00:00Z.",
		},
		{name: "oneOf with one opened", gates: &gatesapi.Gates{Require: gatesapi.RequireOneOf, Refs: []string{"change-freeze", "open-a"}}, open: true},
		{
			name:  "oneOf with none opened",
			gates: &gatesapi.Gates{Require: gatesapi.RequireOneOf, Refs: []string{"change-freeze", "closed-a"}},
			message: "Reconciliation is blocked as none of its gates is opened: gate '" + ns +
				"/change-freeze' is closed until 2026-12-01T00:00:00Z and gate '" + ns + "/closed-a' is closed.",
		},
		{
			name:    "missing gate counts as closed",
			gates:   &gatesapi.Gates{Refs: []string{"open-a", "nope"}},
			message: "Reconciliation is blocked as gate '" + ns + "/nope' does not exist.",
		},
		{
			name:    "gate without an Opened condition counts as closed",
			gates:   &gatesapi.Gates{Refs: []string{"new"}},
			message: "Reconciliation is blocked as gate '" + ns + "/new' has not been evaluated by the gating-controller yet.",
		},
		{name: "cross-namespace ref", gates: &gatesapi.Gates{Refs: []string{other + "/shared"}}, open: true},
		{
			name:    "cross-namespace ref is not the local gate",
			gates:   &gatesapi.Gates{Refs: []string{other + "/open-a"}},
			message: "Reconciliation is blocked as gate '" + other + "/open-a' does not exist.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := gates.Evaluate(context.Background(), env.Client, ns, tc.gates)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Open).To(Equal(tc.open))
			g.Expect(res.Message()).To(Equal(tc.message))
			// The RFC's Approved message says the same in its own words.
			approval := strings.Replace(strings.Replace(tc.message, "Reconciliation is blocked as none of its gates is opened: ",
				"Reconciliation is waiting approval, none of its gates is opened: ", 1),
				"Reconciliation is blocked as ", "Reconciliation is waiting approval, ", 1)
			g.Expect(res.ApprovalMessage()).To(Equal(approval))
			if tc.gates != nil {
				g.Expect(res.Gates).To(HaveLen(len(tc.gates.Refs)))
			}
		})
	}
}

func TestEvaluateNextOpening(t *testing.T) {
	ns := env.Namespace(t)
	early := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	late := time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)
	createGate(t, ns, "early", closedUntil(early))
	createGate(t, ns, "late", closedUntil(late))
	createGate(t, ns, "forever", closed())

	eval := func(g *gatesapi.Gates) gates.Result {
		res, err := gates.Evaluate(context.Background(), env.Client, ns, g)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		return res
	}
	g := NewWithT(t)
	g.Expect(*eval(&gatesapi.Gates{Refs: []string{"early", "late"}}).NextOpening()).To(BeTemporally("==", late))
	g.Expect(*eval(&gatesapi.Gates{Require: gatesapi.RequireOneOf, Refs: []string{"early", "late"}}).NextOpening()).
		To(BeTemporally("==", early))
	g.Expect(eval(&gatesapi.Gates{Refs: []string{"early", "forever"}}).NextOpening()).To(BeNil())
	g.Expect(*eval(&gatesapi.Gates{Require: gatesapi.RequireOneOf, Refs: []string{"forever", "late"}}).NextOpening()).
		To(BeTemporally("==", late))
}

func TestLogValue(t *testing.T) {
	ns := env.Namespace(t)
	createGate(t, ns, "change-freeze", closed())
	createGate(t, ns, "bypass-signoff", opened())
	res, err := gates.Evaluate(context.Background(), env.Client, ns,
		&gatesapi.Gates{Require: gatesapi.RequireOneOf, Refs: []string{"change-freeze", "bypass-signoff"}})

	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Open).To(BeTrue())
	g.Expect(res.LogValue()).To(Equal(map[string]any{
		"require": "oneOf",
		"status": []map[string]string{
			{"gate": "change-freeze", "closed": "true"},
			{"gate": "bypass-signoff", "closed": "false"},
		},
	}))
}
