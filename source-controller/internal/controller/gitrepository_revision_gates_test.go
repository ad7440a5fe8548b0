package controller

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A gate approved for one revision lets the GitRepository fetch that revision and no newer
// one: a newer commit waits for its own approval (ls-remote tells it), and the approved artifact
// stays served.
func TestGitRepositoryFetchesOnlyTheApprovedRevision(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "release")
	first := "master@sha1:" + repo.Commit(t, "first", map[string]string{"a": "1"})
	gatestest.SetOpenedForRevision(t, k8s, ns, "release", first)
	key := createRepo(t, ns, "release", sourcev1.GitRepositorySpec{
		URL: repo.HTTPURL(), Gates: &gatesapi.Gates{Refs: []string{"release"}},
	})
	g.Eventually(revision(key), timeout).Should(Equal(first))

	second := "master@sha1:" + repo.Commit(t, "second", map[string]string{"a": "2"})
	poke(t, key)
	g.Eventually(condition(key, gatesapi.BlockedCondition), timeout).Should(Equal("True|GateClosed|Reconciliation is blocked as revision '" +
		second + "' waits for its own approval (gate '" + ns + "/release' is approved for revision '" + first + "')."))
	g.Expect(getRepo(g, key).Status.Gates.WaitingRevision).To(Equal(second))
	g.Expect(fetchArtifact(t, key)["a"]).To(Equal("1"))

	gatestest.SetOpenedForRevision(t, k8s, ns, "release", second)
	g.Eventually(revision(key), timeout).Should(Equal(second))
	g.Expect(fetchArtifact(t, key)["a"]).To(Equal("2"))
}
