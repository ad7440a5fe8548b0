package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// setGate writes a Gate's Opened condition as the gating-controller does.
func setGate(t *testing.T, ns, name string, opened bool) {
	t.Helper()
	gatestest.SetOpened(t, k8s, ns, name, opened)
}

// A closed change-freeze holds the source on its last artifact; opening it releases the new
// revision within seconds, without waiting for the interval (docs/gitrepository.md, Gates).
func TestGitRepositoryWaitsOnItsGates(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "gated")
	first := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	setGate(t, ns, "change-freeze", false)
	key := createRepo(t, ns, "gated", sourcev1.GitRepositorySpec{
		URL: repo.HTTPURL(), Gates: &gatesapi.Gates{Refs: []string{"change-freeze"}},
	})

	// Blocked before its first artifact: not ready.
	blocked := "True|GateClosed|Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed."
	g.Eventually(condition(key, gatesapi.BlockedCondition), timeout).Should(Equal(blocked))
	g.Expect(condition(key, meta.ReadyCondition)(g)).To(Equal(
		"False|GateClosed|Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed."))
	g.Expect(getRepo(g, key).Status.Artifact).To(BeNil())
	// The log line of docs/gitrepository.md: the gates considered and their status.
	g.Expect(logs.Lines()).To(ContainElement(And(
		ContainSubstring(`"GitRepository":{"name":"gated","namespace":"`+ns+`"}`),
		ContainSubstring(`"gates":{"require":"all","status":[{"closed":"true","gate":"change-freeze"}]}`),
	)))

	setGate(t, ns, "change-freeze", true)
	g.Eventually(revision(key), 5*time.Second).Should(Equal("master@sha1:" + first))
	g.Eventually(condition(key, gatesapi.BlockedCondition), timeout).Should(BeEmpty())

	g.Eventually(func(g Gomega) *gatesapi.GatesStatus { return getRepo(g, key).Status.Gates }, timeout).
		Should(Equal(&gatesapi.GatesStatus{State: "open"}))

	// Closed again: a new commit waits, the last artifact stays served and Ready, which says what
	// waits; `kubectl get` shows the gate that holds it.
	setGate(t, ns, "change-freeze", false)
	second := repo.Commit(t, "Second", map[string]string{"a": "2"})
	poke(t, key)
	g.Eventually(condition(key, gatesapi.BlockedCondition), timeout).Should(Equal(blocked))
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + first +
		"'; revision 'master@sha1:" + second + "' waits for the gates: closed (change-freeze)"))
	g.Expect(fetchArtifact(t, key)["a"]).To(Equal("1"))
	held := getRepo(g, key).Status.Gates
	g.Expect(held.State).To(Equal("closed (change-freeze)"))
	g.Expect(held.WaitingRevision).To(Equal("master@sha1:" + second))
	g.Expect(held.HeldSince).NotTo(BeNil())
	cols, err := env.Columns(context.Background(), sourcev1.GroupVersion.WithResource("gitrepositories"), ns, "gated")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cols).To(HaveKeyWithValue("Gates", "closed (change-freeze)"))
	g.Expect(cols["Status"]).To(ContainSubstring("waits for the gates"))

	setGate(t, ns, "change-freeze", true)
	g.Eventually(revision(key), 5*time.Second).Should(Equal("master@sha1:" + second))
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + second + "'"))
	g.Expect(getRepo(g, key).Status.Gates).To(Equal(&gatesapi.GatesStatus{State: "open"}))
	// Held twice (before the first artifact and for the second commit), released twice.
	g.Eventually(eventsOf(key), timeout).Should(ContainElements(
		"Normal Held: Reconciliation is blocked as gate '"+ns+"/change-freeze' is closed.",
		MatchRegexp(`^Normal Released: released by its gates after waiting \d+s$`),
	))
	g.Expect(eventsOf(key)(g)).To(HaveEach(Not(ContainSubstring("Warning"))))
}
