package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// With spec.recurseSubmodules the artifact holds the submodules, nested ones too, at the
// commits the tree pins, fetched with the repository's credentials; a new pinned commit comes
// round, and turning the flag off rebuilds the artifact without them.
func TestGitRepositoryRecurseSubmodules(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret"})
	deep := server.NewRepo(t, "deep")
	deep.Commit(t, "deep", map[string]string{"deep.yaml": "d1"})
	lib := server.NewRepo(t, "lib")
	lib.Commit(t, "lib", map[string]string{"lib.yaml": "v1"})
	lib.AddSubmodule(t, "nested/deep", "../deep.git")
	app := server.NewRepo(t, "app")
	app.Commit(t, "app", map[string]string{"app.yaml": "a"})
	first := app.AddSubmodule(t, "vendor/lib", "../lib.git")
	createSecret(t, ns, "auth", map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")})

	key := createRepo(t, ns, "app", sourcev1.GitRepositorySpec{
		URL: app.HTTPURL(), SecretRef: &meta.LocalObjectReference{Name: "auth"}, RecurseSubmodules: true,
	})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + first + "'"))
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{
		"app.yaml": "a", "vendor/lib/lib.yaml": "v1", "vendor/lib/nested/deep/deep.yaml": "d1",
	}))
	g.Expect(getRepo(g, key).Status.ObservedRecurseSubmodules).To(BeTrue())

	// A new commit of the submodule is not in the artifact until the repository pins it.
	lib.Commit(t, "lib v2", map[string]string{"lib.yaml": "v2"})
	second := app.UpdateSubmodule(t, "vendor/lib")
	poke(t, key)
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + second))
	g.Expect(fetchArtifact(t, key)["vendor/lib/lib.yaml"]).To(Equal("v2"))

	updateRepo(t, key, func(s *sourcev1.GitRepositorySpec) { s.RecurseSubmodules = false })
	g.Eventually(func(g Gomega) bool { return getRepo(g, key).Status.ObservedRecurseSubmodules }, timeout).Should(BeFalse())
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{"app.yaml": "a"}))
}
