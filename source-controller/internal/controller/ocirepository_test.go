package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

func getOCIRepo(g Gomega, key client.ObjectKey) *sourcev1.OCIRepository {
	obj := &sourcev1.OCIRepository{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

func ociRevision(key client.ObjectKey) func(g Gomega) string {
	return func(g Gomega) string {
		if a := getOCIRepo(g, key).Status.Artifact; a != nil {
			return a.Revision
		}
		return ""
	}
}

// An OCI artifact behind basic auth (dockerconfigjson): the tag's manifest digest is the
// revision, the layer's content is the artifact, the manifest's annotations its metadata; a
// semver range picks the highest tag; a digest pins one.
func TestOCIRepositoryPullsArtifacts(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	annotations := map[string]string{"org.opencontainers.image.revision": "main@sha1:1234"}
	d1 := registry.PushArtifact(t, "manifests/app:1.0.0", map[string]string{"app.yaml": "v: 1\n"}, annotations)
	d2 := registry.PushArtifact(t, "manifests/app:1.1.0", map[string]string{"app.yaml": "v: 2\n"}, annotations)

	auth := base64.StdEncoding.EncodeToString([]byte("bob:s3cret"))
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{registry.Host(): map[string]string{"auth": auth}}})
	createSecret(t, ns, "regcred", map[string][]byte{".dockerconfigjson": config})
	spec := func(ref sourcev1.OCIRepositoryRef) sourcev1.OCIRepositorySpec {
		return sourcev1.OCIRepositorySpec{URL: "oci://" + registry.Host() + "/manifests/app", Insecure: true, Reference: &ref,
			SecretRef: &meta.LocalObjectReference{Name: "regcred"}, Interval: metav1.Duration{Duration: time.Hour}}
	}
	create := func(name string, s sourcev1.OCIRepositorySpec) client.ObjectKey {
		obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: s}
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		return client.ObjectKeyFromObject(obj)
	}

	tagged := create("tag", spec(sourcev1.OCIRepositoryRef{Tag: "1.0.0"}))
	g.Eventually(ociRevision(tagged), timeout).Should(Equal("1.0.0@" + d1))
	obj := getOCIRepo(g, tagged)
	g.Expect(obj.Status.Artifact.Metadata).To(HaveKeyWithValue("org.opencontainers.image.revision", "main@sha1:1234"))
	g.Expect(obj.Status.URL).To(HaveSuffix("/ocirepository/" + ns + "/tag/latest.tar.gz"))

	semverKey := create("semver", spec(sourcev1.OCIRepositoryRef{SemVer: "1.x"}))
	g.Eventually(ociRevision(semverKey), timeout).Should(Equal("1.1.0@" + d2))

	pinned := create("digest", spec(sourcev1.OCIRepositoryRef{Digest: d1}))
	g.Eventually(ociRevision(pinned), timeout).Should(Equal(d1))

	// A new push of the tag gives a new revision.
	d3 := registry.PushArtifact(t, "manifests/app:1.0.0", map[string]string{"app.yaml": "v: 3\n"}, annotations)
	o := getOCIRepo(g, tagged)
	p := client.MergeFrom(o.DeepCopy())
	o.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
	g.Expect(k8s.Patch(context.Background(), o, p)).To(Succeed())
	g.Eventually(ociRevision(tagged), timeout).Should(Equal("1.0.0@" + d3))

	// Wrong credentials: the fetch fails and says so.
	bad, _ := json.Marshal(map[string]any{"auths": map[string]any{registry.Host(): map[string]string{"username": "bob", "password": "nope"}}})
	createSecret(t, ns, "badcred", map[string][]byte{".dockerconfigjson": bad})
	s := spec(sourcev1.OCIRepositoryRef{Tag: "1.0.0"})
	s.SecretRef.Name = "badcred"
	denied := create("denied", s)
	g.Eventually(func(g Gomega) string {
		for _, c := range getOCIRepo(g, denied).Status.Conditions {
			if c.Type == sourcev1.FetchFailedCondition {
				return c.Reason
			}
		}
		return ""
	}, timeout).Should(Equal(sourcev1.OCIPullFailedReason))
}
