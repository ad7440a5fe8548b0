package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A GitRepository including another waits for it (IncludeUnavailable) until it has an artifact,
// then holds its fromPath at toPath; a new commit of the included repository comes round in
// the including one's artifact by itself (the watch), its revision still its own commit.
func TestGitRepositoryInclude(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	app := server.NewRepo(t, "app")
	appSHA := app.Commit(t, "app", map[string]string{"kustomization.yaml": "app", "vendor/keep.txt": "k"})
	lib := server.NewRepo(t, "lib")
	lib.Commit(t, "lib", map[string]string{"deploy/base.yaml": "v1", "README.md": "lib"})

	include := []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "lib"}, FromPath: "deploy", ToPath: "vendor/lib"}}
	key := createRepo(t, ns, "app", sourcev1.GitRepositorySpec{URL: app.HTTPURL(), Include: include})
	g.Eventually(condition(key, sourcev1.IncludeUnavailableCondition), timeout).Should(Equal(
		"True|NotFound|included GitRepository '" + ns + "/lib' not found"))
	g.Expect(condition(key, meta.ReadyCondition)(g)).To(Equal("False|NotFound|included GitRepository '" + ns + "/lib' not found"))
	g.Expect(condition(key, meta.StalledCondition)(g)).To(BeEmpty(), "it waits, it does not stall")
	g.Expect(getRepo(g, key).Status.Artifact).To(BeNil())

	libKey := createRepo(t, ns, "lib", sourcev1.GitRepositorySpec{URL: lib.HTTPURL()})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + appSHA + "'"))
	g.Expect(condition(key, sourcev1.IncludeUnavailableCondition)(g)).To(BeEmpty())
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{
		"kustomization.yaml": "app", "vendor/keep.txt": "k", "vendor/lib/base.yaml": "v1",
	}))
	obj := getRepo(g, key)
	g.Expect(obj.Status.ObservedInclude).To(Equal(include))
	g.Expect(obj.Status.IncludedArtifacts).To(HaveLen(1))
	g.Expect(obj.Status.IncludedArtifacts[0]).To(Equal(getRepo(g, libKey).Status.Artifact))

	libSHA := lib.Commit(t, "lib v2", map[string]string{"deploy/base.yaml": "v2"})
	poke(t, libKey)
	g.Eventually(revision(libKey), timeout).Should(Equal("master@sha1:" + libSHA))
	g.Eventually(func(g Gomega) string {
		incl := getRepo(g, key).Status.IncludedArtifacts
		g.Expect(incl).To(HaveLen(1))
		return incl[0].Revision
	}, timeout).Should(Equal("master@sha1:" + libSHA))
	g.Expect(revision(key)(g)).To(Equal("master@sha1:" + appSHA))
	g.Expect(fetchArtifact(t, key)["vendor/lib/base.yaml"]).To(Equal("v2"))

	// toPath defaults to the repository's name; without fromPath, the whole artifact.
	updateRepo(t, key, func(s *sourcev1.GitRepositorySpec) {
		s.Include = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "lib"}}}
	})
	g.Eventually(func(g Gomega) int { return len(getRepo(g, key).Status.ObservedInclude) }, timeout).Should(Equal(1))
	g.Eventually(func(g Gomega) string { return getRepo(g, key).Status.ObservedInclude[0].ToPath }, timeout).Should(BeEmpty())
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{
		"kustomization.yaml": "app", "vendor/keep.txt": "k", "lib/deploy/base.yaml": "v2", "lib/README.md": "lib",
	}))

	// Paths outside the artifact, and a fromPath the artifact lacks, fail; the last artifact stays.
	updateRepo(t, key, func(s *sourcev1.GitRepositorySpec) { s.Include[0].ToPath = "../escape" })
	g.Eventually(condition(key, sourcev1.StorageOperationFailedCondition), timeout).Should(Equal(
		"True|IllegalPath|include 'lib': path '../escape' leads outside the artifact"))
	updateRepo(t, key, func(s *sourcev1.GitRepositorySpec) { s.Include[0].ToPath = "x"; s.Include[0].FromPath = "missing" })
	g.Eventually(condition(key, sourcev1.StorageOperationFailedCondition), timeout).Should(Equal(
		"True|CopyFailure|failed to copy 'lib' include from 'missing' to 'x': 'missing' is not in the artifact of revision 'master@sha1:" + libSHA + "'"))
	g.Expect(fetchArtifact(t, key)).To(HaveKey("lib/README.md"))
}
