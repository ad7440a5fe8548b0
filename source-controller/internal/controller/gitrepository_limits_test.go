package controller

import (
	"crypto/rand"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A commit that makes the clone larger than --git-max-clone-size (8 MiB in the suite) is
// refused with a condition and an event naming the size and the limit, and the last good
// artifact stays served. With a pack under the limit, the working tree is measured before it
// is written and the message gives the whole size; a pack over the limit is stopped while it
// is fetched.
func TestGitRepositoryCloneOverTheLimitKeepsTheArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "growing")
	first := repo.Commit(t, "Initial commit", map[string]string{"app.yaml": "v: 1\n"})
	key := createRepo(t, ns, "growing", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + first))
	served := fetchArtifact(t, key)

	for _, tc := range []struct {
		name string
		// size of a file of random bytes, which compress to nothing: the pack holds about as
		// much as the working tree.
		size    int
		message string
	}{
		// A 5 MiB pack and a 5 MiB working tree.
		{"measured", 5 << 20, `Git clone is 10(\.\d)? MiB, over --git-max-clone-size \(8 MiB\)$`},
		// A 12 MiB pack.
		{"stopped", 12 << 20, `Git clone is more than 8 MiB, over --git-max-clone-size \(8 MiB\)$`},
	} {
		noise := make([]byte, tc.size)
		_, _ = rand.Read(noise)
		sha := repo.Commit(t, "Add a big file", map[string]string{"big.bin": string(noise)})
		poke(t, key)
		want := And(HavePrefix("False|"+sourcev1.SourceTooLargeReason+"|failed to checkout 'master@sha1:"+sha+"'"), MatchRegexp(tc.message))
		g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(want, tc.name)
		g.Expect(condition(key, sourcev1.FetchFailedCondition)(g)).To(And(HavePrefix("True|"), MatchRegexp(tc.message)), tc.name)
		g.Eventually(eventsOf(key), timeout).Should(ContainElement(And(
			HavePrefix("Warning "+sourcev1.SourceTooLargeReason+": "), MatchRegexp(tc.message))), tc.name)
		g.Expect(revision(key)(g)).To(Equal("master@sha1:"+first), tc.name)
		g.Expect(fetchArtifact(t, key)).To(Equal(served), "%s: the last good artifact is still served", tc.name)
	}
}
