package controller

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A layer over --oci-max-layer-size (4 MiB in the suite) is refused with a condition and an
// event naming its size and the limit, and the last good artifact stays served. The size is
// the manifest's: a layer whose descriptor claims more than the limit is refused, although its
// content is small, so it is refused before it is downloaded.
func TestOCIRepositoryLayerOverTheLimitKeepsTheArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	good := registry.PushArtifact(t, "app:good", map[string]string{"app.yaml": "v: 1\n"}, nil)
	noise := make([]byte, 6<<20)
	_, _ = rand.Read(noise)
	registry.PushArtifact(t, "app:big", map[string]string{"blob.bin": string(noise)}, nil)
	pushClaimingLayerSize(t, registry, "app:claims-big", map[string]string{"app.yaml": "v: 2\n"}, 5<<20)

	obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: sourcev1.OCIRepositorySpec{
		URL: "oci://" + registry.Host() + "/app", Insecure: true, Reference: &sourcev1.OCIRepositoryRef{Tag: "good"},
		Interval: metav1.Duration{Duration: time.Hour},
	}}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(ociRevision(key), timeout).Should(Equal("good@" + good))
	served := fetchArtifactOf(t, getOCIRepo(g, key).Status.Artifact)

	for _, tc := range []struct{ tag, message string }{
		// 6 MiB of random bytes, which gzip does not shrink.
		{"big", `OCI layer is 6(\.\d)? MiB, over --oci-max-layer-size \(4 MiB\)$`},
		{"claims-big", `OCI layer is 5 MiB, over --oci-max-layer-size \(4 MiB\)$`},
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
		}, timeout).Should(And(
			HavePrefix(sourcev1.SourceTooLargeReason+"|pulling the layer of '"+registry.Host()+"/app:"+tc.tag+"'"),
			MatchRegexp(tc.message)), tc.tag)
		o = getOCIRepo(g, key)
		fetch := conditions.Get(o, sourcev1.FetchFailedCondition)
		g.Expect(fetch).NotTo(BeNil(), tc.tag)
		g.Expect(fetch.Reason).To(Equal(sourcev1.SourceTooLargeReason), tc.tag)
		g.Eventually(eventsOf(key), timeout).Should(ContainElement(And(
			HavePrefix("Warning "+sourcev1.SourceTooLargeReason+": "), MatchRegexp(tc.message))), tc.tag)
		g.Expect(o.Status.Artifact.Revision).To(Equal("good@"+good), tc.tag)
		g.Expect(fetchArtifactOf(t, o.Status.Artifact)).To(Equal(served), "%s: the last good artifact is still served", tc.tag)
	}
}

// pushClaimingLayerSize pushes an artifact of one layer, the tar.gz of files, whose manifest
// gives that layer the size claimed instead of its own.
func pushClaimingLayerSize(t *testing.T, reg *testserver.Registry, ref string, files map[string]string, claimed int64) {
	t.Helper()
	g := NewWithT(t)
	r, err := name.ParseReference(reg.Host() + "/" + ref)
	g.Expect(err).NotTo(HaveOccurred())
	describe := func(l v1.Layer, mediaType types.MediaType) v1.Descriptor {
		d, err := l.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		size, err := l.Size()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.WriteLayer(r.Context(), l, reg.RemoteOptions()...)).To(Succeed())
		return v1.Descriptor{MediaType: mediaType, Size: size, Digest: d}
	}
	config := describe(static.NewLayer([]byte("{}"), testserver.FluxConfigMediaType), testserver.FluxConfigMediaType)
	layer := describe(static.NewLayer(tarGzip(t, files), testserver.FluxContentMediaType), testserver.FluxContentMediaType)
	layer.Size = claimed
	raw, err := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: config, Layers: []v1.Descriptor{layer}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Put(r, rawManifest(raw), reg.RemoteOptions()...)).To(Succeed())
}

// rawManifest is an OCI manifest pushed as its bytes.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
