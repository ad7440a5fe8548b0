package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// updateRepo patches the spec of a GitRepository.
func updateRepo(t *testing.T, key client.ObjectKey, change func(*sourcev1.GitRepositorySpec)) {
	t.Helper()
	g := NewWithT(t)
	obj := getRepo(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	change(&obj.Spec)
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())
}

// Only the directories of spec.sparseCheckout reach the artifact ("./" and a trailing "/" are
// accepted); a change of the list rebuilds the artifact of the same commit; a directory that
// is not in the repository fails the fetch and the last artifact stays.
func TestGitRepositorySparseCheckout(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "sparse")
	sha := repo.Commit(t, "layout", map[string]string{
		"README.md": "r", "apps/a.yaml": "a", "apps/base/b.yaml": "b", "infra/x.yaml": "x", "infrastructure/y.yaml": "y",
	})
	key := createRepo(t, ns, "sparse", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), SparseCheckout: []string{"./apps", "infra/"}})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + sha + "'"))
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{"apps/a.yaml": "a", "apps/base/b.yaml": "b", "infra/x.yaml": "x"}))
	obj := getRepo(g, key)
	g.Expect(obj.Status.ObservedSparseCheckout).To(Equal([]string{"./apps", "infra/"}))
	first := obj.Status.Artifact.Digest

	updateRepo(t, key, func(s *sourcev1.GitRepositorySpec) { s.SparseCheckout = []string{"apps/base"} })
	g.Eventually(func(g Gomega) []string { return getRepo(g, key).Status.ObservedSparseCheckout }, timeout).Should(Equal([]string{"apps/base"}))
	g.Expect(revision(key)(g)).To(Equal("master@sha1:" + sha))
	g.Expect(getRepo(g, key).Status.Artifact.Digest).NotTo(Equal(first))
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{"apps/base/b.yaml": "b"}))

	updateRepo(t, key, func(s *sourcev1.GitRepositorySpec) { s.SparseCheckout = nil })
	g.Eventually(func(g Gomega) []string { return getRepo(g, key).Status.ObservedSparseCheckout }, timeout).Should(BeNil())
	g.Expect(fetchArtifact(t, key)).To(HaveLen(5))

	updateRepo(t, key, func(s *sourcev1.GitRepositorySpec) { s.SparseCheckout = []string{"apps", "missing"} })
	g.Eventually(condition(key, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|GitOperationFailed|sparse checkout directory 'missing' does not exist in the repository"))
	g.Expect(condition(key, meta.ReadyCondition)(g)).To(HavePrefix("False|GitOperationFailed|"))
	g.Expect(fetchArtifact(t, key)).To(HaveLen(5), "the last artifact stays")
	g.Expect(getRepo(g, key).Status.ObservedSparseCheckout).To(BeNil())
}
