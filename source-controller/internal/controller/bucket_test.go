package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// The objects under spec.prefix, signed for with the keys of spec.secretRef, are the artifact,
// each at its key; the revision is Flux's digest of their keys and ETags.
func TestBucketFetchesObjectsUnderPrefix(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{AccessKey: "flux", SecretKey: "s3cret-key"})
	app := map[string]string{"app/deploy.yaml": "kind: Deployment\n", "app/base/svc.yaml": "kind: Service\n"}
	for k, v := range app {
		s3.Put(t, "manifests", k, v)
	}
	s3.Put(t, "manifests", "other/cm.yaml", "kind: ConfigMap\n")
	createSecret(t, ns, "s3-keys", map[string][]byte{"accesskey": []byte("flux"), "secretkey": []byte("s3cret-key")})

	key := createBucket(t, ns, "app", sourcev1.BucketSpec{
		BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true, Prefix: "app/",
		SecretRef: &meta.LocalObjectReference{Name: "s3-keys"},
	})
	rev := wantRevision(app)
	g.Eventually(bucketRevision(key), timeout).Should(Equal(rev))
	g.Eventually(bucketCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact: revision '" + rev + "'"))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(app))
	obj := getBucket(g, key)
	g.Expect(obj.Status.URL).To(HaveSuffix("/bucket/" + ns + "/app/latest.tar.gz"))
	g.Expect(obj.Status.Artifact.Path).To(HaveSuffix(rev[len("sha256:"):] + ".tar.gz"))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Normal NewArtifact: stored artifact with 2 fetched files from 'manifests' bucket"))
	cols, err := env.Columns(context.Background(), sourcev1.GroupVersion.WithResource("buckets"), ns, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cols).To(HaveKeyWithValue("Endpoint", s3.Endpoint()))
	g.Expect(cols).To(HaveKeyWithValue("Ready", "True"))
	g.Expect(cols).To(HaveKey("Gates"))
}

// An unchanged bucket is listed, not downloaded: no GET of any object, the same revision. A
// changed object gives a new revision and content, a deleted one leaves the artifact.
func TestBucketDownloadsOnlyWhenTheListingChanges(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	objects := map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n", ".sourceignore": "*.md\n", "README.md": "docs"}
	for k, v := range objects {
		s3.Put(t, "manifests", k, v)
	}
	key := createBucket(t, ns, "unchanged", sourcev1.BucketSpec{BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true})
	first := wantRevision(map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"})
	g.Eventually(bucketRevision(key), timeout).Should(Equal(first))
	// The two objects and the .sourceignore.
	gets := s3.Gets("manifests")
	g.Expect(gets).To(Equal(3))

	pokeBucket(t, key)
	g.Eventually(bucketCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact: revision '" + first + "'"))
	g.Expect(s3.Gets("manifests")).To(Equal(gets))
	g.Expect(bucketRevision(key)(g)).To(Equal(first))

	s3.Put(t, "manifests", "b.yaml", "b: 2\n")
	pokeBucket(t, key)
	second := wantRevision(map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 2\n"})
	g.Eventually(bucketRevision(key), timeout).Should(Equal(second))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 2\n"}))

	s3.Delete(t, "manifests", "a.yaml")
	pokeBucket(t, key)
	g.Eventually(bucketRevision(key), timeout).Should(Equal(wantRevision(map[string]string{"b.yaml": "b: 2\n"})))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(map[string]string{"b.yaml": "b: 2\n"}))
}

// The bucket's .sourceignore and spec.ignore exclude objects from the artifact and the
// revision; a pattern of spec.ignore can re-include what .sourceignore excludes.
func TestBucketIgnoreRules(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	for k, v := range map[string]string{
		".sourceignore": "*.md\n", "README.md": "docs", "docs/KEEP.md": "kept",
		"deploy/app.yaml": "app", "secrets/s.yaml": "secret", "deploy/notes.txt": "n",
	} {
		s3.Put(t, "manifests", k, v)
	}
	ignore := "secrets/\n*.txt\n!docs/KEEP.md\n"
	key := createBucket(t, ns, "ignored", sourcev1.BucketSpec{
		BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true, Ignore: &ignore,
	})
	want := map[string]string{"deploy/app.yaml": "app", "docs/KEEP.md": "kept"}
	g.Eventually(bucketRevision(key), timeout).Should(Equal(wantRevision(want)))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(want))
	g.Expect(getBucket(g, key).Status.ObservedIgnore).To(Equal(&ignore))

	// A new .sourceignore is read again.
	s3.Put(t, "manifests", ".sourceignore", "*.md\ndeploy/\n")
	pokeBucket(t, key)
	want = map[string]string{"docs/KEEP.md": "kept"}
	g.Eventually(bucketRevision(key), timeout).Should(Equal(wantRevision(want)))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(want))
}
