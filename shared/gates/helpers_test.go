package gates_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// gateState is how a test wants a Gate's status to look.
type gateState struct {
	opened      *bool // nil: no Opened condition yet
	nextOpening *time.Time
}

func opened() gateState { t := true; return gateState{opened: &t} }
func closed() gateState { f := false; return gateState{opened: &f} }
func closedUntil(at time.Time) gateState {
	s := closed()
	s.nextOpening = &at
	return s
}

// createGate creates a Gate and writes its status as the gating-controller would.
func createGate(t testing.TB, ns, name string, st gateState) *unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	gate := gates.NewGate()
	gate.SetNamespace(ns)
	gate.SetName(name)
	g.Expect(env.Client.Create(context.Background(), gate)).To(Succeed())
	setGateStatus(t, gate, st)
	return gate
}

func setGateStatus(t testing.TB, gate *unstructured.Unstructured, st gateState) {
	t.Helper()
	status := map[string]any{}
	if st.opened != nil {
		cs, reason := "False", "GateClosed"
		if *st.opened {
			cs, reason = "True", "GateOpened"
		}
		status["conditions"] = []any{map[string]any{
			"type": gatesapi.OpenedCondition, "status": cs, "reason": reason, "message": "test",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}
	}
	if st.nextOpening != nil {
		status[gatesapi.NextTransitionField] = st.nextOpening.UTC().Format(time.RFC3339)
	}
	gate.Object["status"] = status
	NewWithT(t).Expect(env.Client.Status().Update(context.Background(), gate)).To(Succeed())
}
