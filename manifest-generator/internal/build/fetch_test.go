package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/artifact"
)

// The artifact is downloaded once per digest, whatever the ManifestGenerations that read it.
func TestBuildDownloadsOncePerDigest(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, stagingLayout("version: 1\ncommandUpdated:\n  generators:\n    - command: kustomize build .\n")))
	storage := filepath.Join(t.TempDir(), "storage")
	b := newBuilder(t, Options{StoragePath: storage})

	for _, path := range []string{"staging", "production"} {
		res, err := b.Build(context.Background(), testOwner, art, specOf(path))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.FromCache).To(BeFalse())
	}
	g.Expect(srv.requests(art)).To(Equal(1))
	hex := strings.TrimPrefix(art.Digest, "sha256:")
	g.Expect(checkoutNames(t, storage)).To(Equal([]string{hex}), "one checkout, named by the digest, no staging leftovers")
}

// Several reconciles building from one new artifact at once share one download and one checkout.
func TestBuildConcurrent(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, stagingLayout("version: 1\ncommandUpdated:\n  generators:\n    - command: kustomize build .\n")))
	b := newBuilder(t, Options{})

	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		path := []string{"staging", "production", "./staging"}[i%3]
		wg.Go(func() {
			res, err := b.Build(context.Background(), testOwner, art, specOf(path))
			if err == nil && len(res.Objects) == 0 {
				err = ErrEmpty
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(srv.requests(art)).To(Equal(1))
}

// A download that does not match status.artifact.digest is refused, retried (not terminal) and
// not remembered: the next Build downloads again.
func TestBuildDigestMismatch(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	good := tarGz(t, writeTree(t, map[string]string{"apps/service.yaml": serviceYAML}))
	art := srv.publishBytes("r1", tarGz(t, writeTree(t, map[string]string{"apps/other.yaml": serviceYAML})))
	art.Digest = sha256Digest(good)
	storage := filepath.Join(t.TempDir(), "storage")
	b := newBuilder(t, Options{StoragePath: storage})

	_, err := b.Build(context.Background(), testOwner, art, specOf("apps"))
	g.Expect(err).To(MatchError(artifact.ErrDigestMismatch))
	g.Expect(IsTerminal(err)).To(BeFalse())
	g.Expect(err.Error()).To(ContainSubstring("main@sha1:r1"))
	g.Expect(checkoutNames(t, storage)).To(BeEmpty(), "nothing kept of a refused artifact")

	// The server now serves the bytes of the digest (the source-controller finished writing).
	srv.publishBytes("r1", good)
	res, err := b.Build(context.Background(), testOwner, art, specOf("apps"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(res.Objects)).To(Equal([]string{"Service//podinfo"}))
	g.Expect(srv.requests(art)).To(Equal(2))
}

// An artifact that breaks the extraction rules stays broken until a new revision.
func TestBuildUnsafeArtifactIsTerminal(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	g.Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "../escape.yaml", Size: 2, Mode: 0o644})).To(Succeed())
	_, _ = tw.Write([]byte("{}"))
	g.Expect(tw.Close()).To(Succeed())
	g.Expect(gz.Close()).To(Succeed())
	art := srv.publishBytes("r1", buf.Bytes())
	b := newBuilder(t, Options{})

	_, err := b.Build(context.Background(), testOwner, art, specOf("./"))
	g.Expect(err).To(MatchError(artifact.ErrUnsafePath))
	g.Expect(IsTerminal(err)).To(BeTrue())
}

// Checkouts beyond MaxCheckouts are deleted, least recently used first.
func TestBuildCheckoutGarbageCollection(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	storage := filepath.Join(t.TempDir(), "storage")
	b := newBuilder(t, Options{StoragePath: storage, MaxCheckouts: 2, CacheSize: -1})
	dir := writeTree(t, map[string]string{"apps/service.yaml": serviceYAML})

	var arts []meta.Artifact
	for _, rev := range []string{"r1", "r2", "r3"} {
		writeTreeInto(t, dir, map[string]string{"apps/revision.txt": rev})
		arts = append(arts, srv.publish(t, rev, dir))
	}
	hex := func(a meta.Artifact) string { return strings.TrimPrefix(a.Digest, "sha256:") }
	build := func(a meta.Artifact) {
		t.Helper()
		_, err := b.Build(context.Background(), testOwner, a, specOf("apps"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	build(arts[0])
	build(arts[1])
	build(arts[0]) // r1 is now more recently used than r2
	build(arts[2])
	g.Expect(checkoutNames(t, storage)).To(ConsistOf(hex(arts[0]), hex(arts[2])))
	g.Expect(srv.requests(arts[0])).To(Equal(1))

	build(arts[1]) // fetched again
	g.Expect(srv.requests(arts[1])).To(Equal(2))
	g.Expect(checkoutNames(t, storage)).To(ConsistOf(hex(arts[2]), hex(arts[1])))
}

// The checkout is shared, so it is read-only: a generator cannot change what another one reads.
// (The bits do not stop root; the controller runs as a non-root user.)
func TestBuildCheckoutIsReadOnly(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml":   "version: 1\ncommandUpdated:\n  generators:\n    - command: cat service.yaml\n",
		"service.yaml": serviceYAML,
	}))
	storage := filepath.Join(t.TempDir(), "storage")
	b := newBuilder(t, Options{StoragePath: storage})
	_, err := b.Build(context.Background(), testOwner, art, specOf(""))
	g.Expect(err).NotTo(HaveOccurred())

	checkout := filepath.Join(storage, strings.TrimPrefix(art.Digest, "sha256:"))
	for _, p := range []string{checkout, filepath.Join(checkout, "service.yaml"), filepath.Join(checkout, ".flux.yaml")} {
		fi, err := os.Stat(p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fi.Mode().Perm()&0o222).To(BeZero(), p)
	}
}

// A new process starts from a clean storage path: checkouts and staging directories of the one
// before are deleted, other files are left alone.
func TestNewCleansStoragePath(t *testing.T) {
	g := NewWithT(t)
	storage := t.TempDir()
	hex := strings.Repeat("ab", 32)
	writeTreeInto(t, storage, map[string]string{
		hex + "/half/deleted.yaml":   "x",
		".artifact-123/staged.yaml":  "x",
		".gc-456/being-deleted.yaml": "x",
		"lost+found/keep":            "x",
	})
	g.Expect(makeReadOnly(filepath.Join(storage, hex))).To(Succeed())
	newBuilder(t, Options{StoragePath: storage})
	g.Expect(checkoutNames(t, storage)).To(Equal([]string{"lost+found"}))
}

// A reconcile waiting for a download that another one started is not failed by the other one
// being cancelled: it fetches the artifact itself.
func TestBuildWaiterOutlivesCancelledFetch(t *testing.T) {
	g := NewWithT(t)
	data := tarGz(t, writeTree(t, map[string]string{"apps/service.yaml": serviceYAML}))
	started := make(chan struct{})
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			close(started)
			<-r.Context().Done() // hangs until the client gives up
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	art := meta.Artifact{URL: srv.URL + "/gitrepository/flux-system/repo/r1.tar.gz", Digest: sha256Digest(data), Revision: "r1"}
	b := newBuilder(t, Options{})

	ctxA, cancelA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() {
		_, err := b.Build(ctxA, testOwner, art, specOf("apps"))
		errA <- err
	}()
	<-started
	resB := make(chan error, 1)
	go func() {
		res, err := b.Build(context.Background(), testOwner, art, specOf("apps"))
		if err == nil && len(res.Objects) != 1 {
			err = ErrEmpty
		}
		resB <- err
	}()
	name := strings.TrimPrefix(art.Digest, "sha256:")
	g.Eventually(func() int {
		b.checkouts.mu.Lock()
		defer b.checkouts.mu.Unlock()
		if c := b.checkouts.entries[name]; c != nil {
			return c.users
		}
		return 0
	}).Should(Equal(2), "the second Build waits for the first one's download")
	cancelA()

	g.Expect(<-errA).To(MatchError(context.Canceled))
	g.Expect(<-resB).NotTo(HaveOccurred())
	g.Expect(requests.Load()).To(Equal(int32(2)))
}
