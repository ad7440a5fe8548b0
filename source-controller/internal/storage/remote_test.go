package storage

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// replicas are two Storages, as two source-controller replicas run them: disks of their own,
// the same URL keys, and one bucket of a real S3 server (Versity's gateway) shared.
func replicas(t *testing.T, opts Options) (a, b *Storage, remote Remote) {
	t.Helper()
	store := testserver.NewObjectStore(t)
	remote, err := NewS3(context.Background(), S3Options{Endpoint: store.Endpoint(), Bucket: store.NewBucket(t), Prefix: "artifacts",
		Insecure: true, AccessKey: store.AccessKey, SecretKey: store.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	opts.Remote = remote
	opts.URLKeys = [][]byte{[]byte(strings.Repeat("k", MinURLKeySize))}
	return newTestStorage(t, opts), newTestStorage(t, opts), remote
}

// get sends a GET for the URL u (its path) to the artifact server of s, with the headers h.
func get(s *Storage, u string, h map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, u, nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// An artifact written by one replica is served by the other at the same URL: its content, the
// digest as ETag, a Range, and the stable link; the other verifies it and can read it locally
// (downloaded and checked).
func TestRemoteArtifactServedByEveryReplica(t *testing.T) {
	g := NewWithT(t)
	a, b, _ := replicas(t, Options{})
	content := strings.Repeat("artifact bytes ", 1000)
	art := a.NewArtifactFor("GitRepository", testObject("app"), "main@sha1:1", "1.tar.gz")
	g.Expect(a.Copy(&art, strings.NewReader(content))).To(Succeed())
	_, err := os.Stat(b.LocalPath(art))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "b has no copy of its own")

	rec := get(b, art.URL, nil)
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	g.Expect(rec.Body.String()).To(Equal(content))
	g.Expect(rec.Header().Get("ETag")).To(Equal(`"` + art.Digest + `"`))
	g.Expect(rec.Header().Get("Content-Type")).To(Equal("application/gzip"))

	rec = get(b, art.URL, map[string]string{"Range": "bytes=15-29"})
	g.Expect(rec.Code).To(Equal(http.StatusPartialContent))
	g.Expect(rec.Body.String()).To(Equal(content[15:30]))

	// The signature still decides: a path without it, or another object's, is not served.
	rec = get(b, "http://x/"+art.Path, nil)
	g.Expect(rec.Code).To(Equal(http.StatusNotFound))
	other := a.NewArtifactFor("GitRepository", testObject("other"), "main@sha1:1", "1.tar.gz")
	rec = get(b, strings.Replace(art.URL, "/default/app/", "/default/other/", 1), nil)
	g.Expect(rec.Code).To(Equal(http.StatusNotFound), "%s", other.Path)

	link, err := a.Symlink(art, "latest.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	rec = get(b, link, nil)
	g.Expect(rec.Code).To(Equal(http.StatusOK))
	g.Expect(rec.Body.String()).To(Equal(content))

	g.Expect(b.ArtifactExist(art)).To(BeTrue())
	g.Expect(b.Verify(art)).To(Succeed())
	wrong := art
	wrong.Digest = "sha256:" + strings.Repeat("0", 64)
	g.Expect(b.Verify(wrong)).To(MatchError(ErrDigestMismatch))

	p, err := b.Localize(context.Background(), art)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.ReadFile(p)).To(Equal([]byte(content)))
	g.Expect(b.Verify(art)).To(Succeed(), "the local copy has the artifact's digest")
}

// Garbage collection with two writers of one object (a replica that took the object over while
// the other still finished its reconcile): each keeps its current artifact and the store keeps
// both, whatever the order; what is beyond the retention goes, here and in the store.
func TestRemoteGarbageCollectionKeepsWhatIsReferenced(t *testing.T) {
	g := NewWithT(t)
	a, b, remote := replicas(t, Options{RetentionTTL: 0, RetentionRecords: 1})
	ctx := context.Background()
	write := func(s *Storage, rev int) meta.Artifact {
		art := s.NewArtifactFor("GitRepository", testObject("app"), fmt.Sprintf("main@sha1:%d", rev), fmt.Sprintf("%d.tar.gz", rev))
		g.Expect(s.Copy(&art, strings.NewReader(fmt.Sprintf("revision %d", rev)))).To(Succeed())
		time.Sleep(1100 * time.Millisecond) // the store's modification times have a second's precision
		return art
	}
	old := write(a, 1)
	currentA := write(a, 2)
	currentB := write(b, 3)
	names := func() []string {
		objects, err := remote.List(ctx, "gitrepository/default/app")
		g.Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, o := range objects {
			out = append(out, o.Name)
		}
		return out
	}
	// a collects what is older than its current artifact, never b's newer one.
	_, err := a.GarbageCollect(ctx, currentA, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names()).To(ConsistOf(currentA.Path, currentB.Path))
	// b's collection then takes a's, older than b's current: the replica that took the object
	// over wins, and a still serves its own from its disk until the status names b's.
	_, err = b.GarbageCollect(ctx, currentB, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names()).To(ConsistOf(currentB.Path))
	g.Expect(b.Verify(currentB)).To(Succeed())
	g.Expect(a.Verify(currentA)).To(Succeed(), "a still has its own copy on disk")
	g.Expect(a.ArtifactExist(old)).To(BeFalse())

	_, err = b.RemoveAll(currentB)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names()).To(BeEmpty())
	rec := get(a, currentB.URL, nil)
	g.Expect(rec.Code).To(Equal(http.StatusNotFound))
}

// countingRemote counts the listings of the real store it wraps.
type countingRemote struct {
	Remote
	lists int
}

func (c *countingRemote) List(ctx context.Context, dir string) ([]RemoteInfo, error) {
	c.lists++
	return c.Remote.List(ctx, dir)
}

// The collection of every reconcile lists the store again only when the current artifact
// changed (or after remoteCollectEvery): not a request per object and interval.
func TestRemoteCollectionListsOncePerArtifact(t *testing.T) {
	g := NewWithT(t)
	a, _, remote := replicas(t, Options{RetentionTTL: 0, RetentionRecords: 1})
	counting := &countingRemote{Remote: remote}
	a.Remote = counting
	ctx := context.Background()
	art := a.NewArtifactFor("GitRepository", testObject("app"), "main@sha1:1", "1.tar.gz")
	g.Expect(a.Copy(&art, strings.NewReader("revision 1"))).To(Succeed())
	for range 3 {
		_, err := a.GarbageCollect(ctx, art, time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(counting.lists).To(Equal(1))
	next := a.NewArtifactFor("GitRepository", testObject("app"), "main@sha1:2", "2.tar.gz")
	g.Expect(a.Copy(&next, strings.NewReader("revision 2"))).To(Succeed())
	_, err := a.GarbageCollect(ctx, next, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counting.lists).To(Equal(2))
}
