package controller

import (
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
	ns := newNamespace(t)
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

	// Closed again: a new commit waits, the last artifact stays served and Ready.
	setGate(t, ns, "change-freeze", false)
	second := repo.Commit(t, "Second", map[string]string{"a": "2"})
	poke(t, key)
	g.Eventually(condition(key, gatesapi.BlockedCondition), timeout).Should(Equal(blocked))
	g.Expect(condition(key, meta.ReadyCondition)(g)).To(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + first + "'"))
	g.Expect(fetchArtifact(t, key)["a"]).To(Equal("1"))

	setGate(t, ns, "change-freeze", true)
	g.Eventually(revision(key), 5*time.Second).Should(Equal("master@sha1:" + second))
}
