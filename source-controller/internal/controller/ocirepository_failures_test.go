package controller

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// pushRawLayer pushes an artifact whose single layer is the tar.gz of entries as given (names
// a well-behaved pusher would refuse included).
func pushRawLayer(t *testing.T, reg *testserver.Registry, ref string, entries map[string]string) {
	t.Helper()
	var files []tarEntry
	for n, content := range entries {
		files = append(files, tarEntry{name: n, body: content, typ: tar.TypeReg})
	}
	pushLayerEntries(t, reg, ref, files) // ocirepository_paths_test.go
}

// Upstream content a controller must refuse: a layer with entries outside the artifact, and
// content over --artifact-max-size. Each gets a condition that says what is wrong, and the last
// good artifact stays served.
func TestOCIRepositoryRefusesBadContent(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	good := registry.PushArtifact(t, "app:good", map[string]string{"app.yaml": "v: 1\n"}, nil)
	pushRawLayer(t, registry, "app:escape", map[string]string{"app.yaml": "v: 2\n", "../../etc/cron.d/evil": "* * * * * root sh\n"})
	noise := make([]byte, 2*maxArtifactSize)
	_, _ = rand.Read(noise)
	registry.PushArtifact(t, "app:huge", map[string]string{"blob.txt": base64.StdEncoding.EncodeToString(noise)}, nil)

	obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: sourcev1.OCIRepositorySpec{
		URL: "oci://" + registry.Host() + "/app", Insecure: true, Reference: &sourcev1.OCIRepositoryRef{Tag: "good"},
		Interval: metav1.Duration{Duration: time.Hour},
	}}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(ociRevision(key), timeout).Should(Equal("good@" + good))
	served := fetchArtifactOf(t, getOCIRepo(g, key).Status.Artifact)

	for _, tc := range []struct{ tag, reason, message string }{
		{"escape", sourcev1.OCILayerOperationFailedReason, "../../etc/cron.d/evil"},
		{"huge", sourcev1.ArtifactTooLargeReason, "artifact is more than 1 MiB, over --artifact-max-size (1 MiB)"},
	} {
		o := getOCIRepo(g, key)
		p := client.MergeFrom(o.DeepCopy())
		o.Spec.Reference.Tag = tc.tag
		g.Expect(k8s.Patch(context.Background(), o, p)).To(Succeed())
		g.Eventually(func(g Gomega) string {
			o := getOCIRepo(g, key)
			c := conditions.Get(o, meta.ReadyCondition)
			if c == nil || c.ObservedGeneration != o.Generation || c.Status != metav1.ConditionFalse {
				return ""
			}
			return c.Reason + "|" + c.Message
		}, timeout).Should(And(HavePrefix(tc.reason+"|"), ContainSubstring(tc.message)), tc.tag)
		o = getOCIRepo(g, key)
		g.Expect(o.Status.Artifact.Revision).To(Equal("good@"+good), tc.tag)
		g.Expect(fetchArtifactOf(t, o.Status.Artifact)).To(Equal(served), tc.tag)
	}
}
