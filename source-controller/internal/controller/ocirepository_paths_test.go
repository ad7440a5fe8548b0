package controller

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// pushLayerEntries pushes, with go-containerregistry, an artifact whose single layer (Flux's
// content media type) is the tar.gz of entries, in order and as given.
func pushLayerEntries(t *testing.T, reg *testserver.Registry, ref string, entries []tarEntry) {
	t.Helper()
	data := tarGzipEntries(t, entries)
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, testserver.FluxConfigMediaType)
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(data, testserver.FluxContentMediaType)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(reg.Host() + "/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, reg.RemoteOptions()...); err != nil {
		t.Fatal(err)
	}
}

// Regression for the class of Flux source-controller CVE-2026-47680 (upstream content written
// outside the artifact directory), for OCI layers: layers whose tar entries climb out with
// '..', are absolute, or go out through a symbolic or hard link, pushed to a real registry
// (go-containerregistry's, over HTTP) and pulled by an OCIRepository whose layerSelector
// extracts the layer. Each is refused with OCIArtifactLayerOperationFailed and a message that
// names the entry, the last good artifact stays served, nothing is written outside the working
// directory (the sentinel around TMPDIR stays empty, the file a hard link points to is not in
// any artifact) and the stored artifact has no entry outside its root. The absolute names
// point into the sentinel rather than /etc, so that a regression writes where the test looks
// (and not into the host's /etc: the tests may run as root). shared/artifact's
// TestFetchRefusesEntriesThatEscapeTheTarget and FuzzExtractTar test the extraction itself.
//
// Checked against a reintroduced bug (then restored): with shared/artifact's extractor
// writing through plain paths (os.OpenFile, os.MkdirAll and os.Link of
// filepath.Join(root.Name(), name) in file, mkdirAll and the hard link case of entry), and
// cleanName, checkSymlink and checkLinks accepting everything, every case fails:
// expectNothingEscaped finds the files of '../../../escaped-dotdot', of both symlinks out and
// of the symlink chain written beside TMPDIR; '../evil' (into the working directory's parent),
// the absolute name (which filepath.Join keeps inside) and the relative hard link (which stores
// the secret file in the artifact) are stored with Ready=True; the absolute hard link fails
// with an OS error instead of the refusal.
func TestOCIRepositoryLayerEntriesOutsideTheArtifact(t *testing.T) {
	g := NewWithT(t)
	sentinel := pathsSentinel(t)
	// A file outside the sentinel that hard links point to, also by its path relative to a
	// working directory's content directory (<sentinel>/tmp/ocirepository-<random>/content).
	secret := filepath.Join(t.TempDir(), "secret")
	g.Expect(os.WriteFile(secret, []byte("host secret\n"), 0o600)).To(Succeed())
	secretRel, err := filepath.Rel(filepath.Join(sentinel, "tmp", "ocirepository-x", "content"), secret)
	g.Expect(err).NotTo(HaveOccurred())

	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	good := registry.PushArtifact(t, "app:good", map[string]string{"app.yaml": "v: 1\n"}, nil)
	obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: sourcev1.OCIRepositorySpec{
		URL: "oci://" + registry.Host() + "/app", Insecure: true, Reference: &sourcev1.OCIRepositoryRef{Tag: "good"},
		LayerSelector: &sourcev1.OCILayerSelector{MediaType: testserver.FluxContentMediaType, Operation: sourcev1.OCILayerExtract},
		Interval:      metav1.Duration{Duration: time.Hour},
	}}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)
	g.Eventually(ociRevision(key), timeout).Should(Equal("good@" + good))
	served := fetchArtifactOf(t, getOCIRepo(g, key).Status.Artifact)

	file := func(name string) tarEntry { return tarEntry{name, escapedMarker + name, tar.TypeReg} }
	symlink := func(name, to string) tarEntry { return tarEntry{name, to, tar.TypeSymlink} }
	hardlink := func(name, to string) tarEntry { return tarEntry{name, to, tar.TypeLink} }
	app := file("app.yaml")
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		message string
	}{
		{"parent", []tarEntry{app, file("../evil")},
			"entry '../evil' climbs out of the target with '..'"},
		{"parent to the sentinel", []tarEntry{app, file("../../../escaped-dotdot")},
			"entry '../../../escaped-dotdot' climbs out of the target with '..'"},
		{"absolute", []tarEntry{app, file(filepath.Join(sentinel, "escaped-abs"))},
			"entry '" + filepath.Join(sentinel, "escaped-abs") + "' is an absolute path"},
		{"symlink out, then a file through it", []tarEntry{app, symlink("out", sentinel), file("out/escaped-symlink")},
			"symlink 'out' points to the absolute path '" + sentinel + "'"},
		{"relative symlink out, then a file through it", []tarEntry{app, symlink("up", "../../.."), file("up/escaped-symlink-rel")},
			"symlink 'up' points to '../../..', outside the artifact"},
		// Each link stays inside on its own (a -> ., e -> a/a/a/../../../x is "x" read
		// lexically), but the kernel resolves e to <sentinel>/escaped-chain.
		{"symlink chain, then a file through it", []tarEntry{app, symlink("a", "."), symlink("e", "a/a/a/../../../escaped-chain"), file("e")},
			"'e' would be written through a link that leaves the artifact"},
		{"hard link out", []tarEntry{app, hardlink("h", secretRel)},
			"hard link 'h' points to '" + secretRel + "', outside the artifact"},
		{"absolute hard link", []tarEntry{app, hardlink("h", secret)},
			"hard link 'h' points to '" + secret + "', outside the artifact"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tag := sanitizeTag(tc.name)
			pushLayerEntries(t, registry, "app:"+tag, tc.entries)
			o := getOCIRepo(g, key)
			p := client.MergeFrom(o.DeepCopy())
			o.Spec.Reference.Tag = tag
			g.Expect(k8s.Patch(context.Background(), o, p)).To(Succeed())
			var ready *metav1.Condition
			g.Eventually(func(g Gomega) bool {
				o := getOCIRepo(g, key)
				ready = conditions.Get(o, meta.ReadyCondition)
				return ready != nil && ready.ObservedGeneration == o.Generation && ready.Status != metav1.ConditionUnknown
			}, timeout).Should(BeTrue(), "the reconcile of the new tag is over")
			expectNothingEscaped(t, sentinel)
			o = getOCIRepo(g, key)
			expectEntriesInside(t, o.Status.Artifact.URL)
			g.Expect(string(ready.Status) + "|" + ready.Reason + "|" + ready.Message).To(Equal("False|" +
				sourcev1.OCILayerOperationFailedReason + "|extracting the layer: artifact entry escapes the target directory: " + tc.message))
			g.Expect(o.Status.Artifact.Revision).To(Equal("good@" + good))
			g.Expect(fetchArtifactOf(t, o.Status.Artifact)).To(Equal(served))
		})
	}
}

// sanitizeTag makes a test case's name a tag: letters and digits, '-' for the rest.
func sanitizeTag(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
