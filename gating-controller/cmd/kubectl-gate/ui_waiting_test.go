package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// holdRepository writes status.gates of a GitRepository as the source-controller does while its
// gates hold it, and returns the row the page shows for it behind a gate.
func holdRepository(t *testing.T, repo *unstructured.Unstructured) waitingObject {
	t.Helper()
	g := NewWithT(t)
	held := map[string]any{
		"state":           "closed (change-freeze, bypass-signoff)",
		"heldSince":       "2026-12-19T09:00:00Z",
		"waitingRevision": "master@sha1:0123456789abcdef0123456789abcdef01234567",
	}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(repo), repo)).To(Succeed())
	g.Expect(unstructured.SetNestedMap(repo.Object, held, "status", "gates")).To(Succeed())
	g.Expect(env.Client.Status().Update(context.Background(), repo)).To(Succeed())

	return waitingObject{Kind: "GitRepository", Namespace: repo.GetNamespace(), Name: repo.GetName(),
		State: held["state"].(string), HeldSince: held["heldSince"].(string), WaitingRevision: held["waitingRevision"].(string)}
}

// A held object shows the revision waiting behind its gates and since when, from status.gates.
func TestUIStateShowsTheRevisionWaitingBehindAGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	demoGates(t, ns)
	want := holdRepository(t, createYAML(t, ns, gitRepository("demo", "change-freeze", "bypass-signoff")))

	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Gates).To(HaveLen(2))
	for _, gate := range st.Gates {
		g.Expect(gate.Waiting).To(Equal([]waitingObject{want}), "gate %s", gate.Name)
	}
}
