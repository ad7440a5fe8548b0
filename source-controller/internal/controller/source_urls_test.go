package controller

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

var (
	oldURLKey = []byte("old-key-0123456789abcdef0123456789abcdef")
	newURLKey = []byte("new-key-0123456789abcdef0123456789abcdef")
)

// After a key rotation every URL of a status is signed with the new first key: the artifact's,
// the stable link's and the included artifacts'. An artifact of another namespace is never
// signed into an object.
func TestSignURLsReSignsEveryURL(t *testing.T) {
	g := NewWithT(t)
	base := filepath.Join(t.TempDir(), "storage")
	before, err := storage.New(storage.Options{BasePath: base, AdvAddr: "sc", URLKeys: [][]byte{oldURLKey}})
	g.Expect(err).NotTo(HaveOccurred())
	after, err := storage.New(storage.Options{BasePath: base, AdvAddr: "sc", URLKeys: [][]byte{newURLKey, oldURLKey}})
	g.Expect(err).NotTo(HaveOccurred())
	r := &SourceReconciler{Storage: after}

	om := metav1.ObjectMeta{Namespace: "team-a", Name: "app"}
	artifactOf := func(s *storage.Storage, kind, namespace, name string) *meta.Artifact {
		a := s.NewArtifactFor(kind, &metav1.ObjectMeta{Namespace: namespace, Name: name}, "rev", "rev.tar.gz")
		return &a
	}
	signedBy := func(s *storage.Storage, a *meta.Artifact) string {
		c := *a
		s.SetArtifactURL(&c)
		return c.URL
	}

	git := &sourcev1.GitRepository{ObjectMeta: om}
	git.Status.Artifact = artifactOf(before, sourcev1.GitRepositoryKind, "team-a", "app")
	git.Status.IncludedArtifacts = []*meta.Artifact{
		artifactOf(before, sourcev1.GitRepositoryKind, "team-a", "lib"),
		artifactOf(before, sourcev1.GitRepositoryKind, "team-b", "secret"), // a status someone else wrote
	}
	old := git.DeepCopy()
	r.signURLs(git)
	g.Expect(git.Status.Artifact.URL).To(Equal(signedBy(after, git.Status.Artifact)))
	g.Expect(git.Status.Artifact.URL).NotTo(Equal(old.Status.Artifact.URL))
	g.Expect(git.Status.Artifact.Path).To(Equal(old.Status.Artifact.Path))
	g.Expect(git.Status.IncludedArtifacts[0].URL).To(Equal(signedBy(after, git.Status.IncludedArtifacts[0])))
	g.Expect(git.Status.IncludedArtifacts[0].URL).NotTo(Equal(old.Status.IncludedArtifacts[0].URL))
	g.Expect(git.Status.IncludedArtifacts[1].URL).To(BeEmpty())

	for _, tt := range []struct {
		obj  source
		kind string
		url  *string
		link string
	}{
		{obj: &sourcev1.HelmRepository{ObjectMeta: om}, kind: sourcev1.HelmRepositoryKind, link: indexLink},
		{obj: &sourcev1.HelmChart{ObjectMeta: om}, kind: sourcev1.HelmChartKind, link: latestLink},
		{obj: &sourcev1.OCIRepository{ObjectMeta: om}, kind: sourcev1.OCIRepositoryKind, link: latestLink},
		{obj: &sourcev1.Bucket{ObjectMeta: om}, kind: sourcev1.BucketKind, link: latestLink},
	} {
		a := artifactOf(before, tt.kind, "team-a", "app")
		tt.obj.SetArtifact(a)
		switch o := tt.obj.(type) {
		case *sourcev1.HelmRepository:
			tt.url = &o.Status.URL
		case *sourcev1.HelmChart:
			tt.url = &o.Status.URL
		case *sourcev1.OCIRepository:
			tt.url = &o.Status.URL
		case *sourcev1.Bucket:
			tt.url = &o.Status.URL
		}
		*tt.url = before.LinkURL(*a, tt.link)
		oldLink := *tt.url
		r.signURLs(tt.obj)
		g.Expect(tt.obj.GetArtifact().URL).To(Equal(signedBy(after, a)), tt.kind)
		g.Expect(*tt.url).To(Equal(after.LinkURL(*a, tt.link)), tt.kind)
		g.Expect(*tt.url).NotTo(Equal(oldLink), tt.kind)
	}
}

// A status whose artifact URL is not the one the controller signs now (as after a key rotation)
// is written again at the next reconcile, also while the object is suspended.
func TestStatusURLIsReSignedOnReconcile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "resign")
	repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	key := createRepo(t, ns, "resign", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	g.Eventually(revision(key), timeout).ShouldNot(BeEmpty())
	signed := getRepo(g, key).Status.Artifact.URL

	staleURL := func() {
		obj := getRepo(g, key)
		patch := client.MergeFrom(obj.DeepCopy())
		obj.Status.Artifact.URL = "http://source-controller/stale-signature/" + obj.Status.Artifact.Path
		g.Expect(k8s.Status().Patch(ctx, obj, patch)).To(Succeed())
		g.Expect(getRepo(g, key).Status.Artifact.URL).NotTo(Equal(signed))
	}
	staleURL()
	poke(t, key)
	g.Eventually(func(g Gomega) string { return getRepo(g, key).Status.Artifact.URL }, timeout).Should(Equal(signed))

	obj := getRepo(g, key)
	obj.Spec.Suspend = true
	g.Expect(k8s.Update(ctx, obj)).To(Succeed())
	g.Eventually(func(g Gomega) int64 { return getRepo(g, key).Status.ObservedGeneration }, timeout).Should(Equal(obj.Generation))
	staleURL()
	poke(t, key)
	g.Eventually(func(g Gomega) string { return getRepo(g, key).Status.Artifact.URL }, timeout).Should(Equal(signed))
}
