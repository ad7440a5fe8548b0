package imagescan

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func TestTagsCachedForInterval(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	clock := newClock()
	s := New(Config{Addresses: allowLoopback, Interval: time.Minute, Clock: clock})
	host, wire := counting(t, reg)
	opts := Options{Transport: reg.Transport()}
	repo := repository(t, host, "app")
	ctx := context.Background()

	tags, err := s.Tags(ctx, repo, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("1.0.0"))
	g.Expect(s.Stats().TagLists).To(Equal(int64(1)))
	// The ping and the list reached the registry (Stats also counts the ping over https that
	// go-containerregistry tries first, which fails before any request is read).
	sent := wire.Load()
	g.Expect(sent).To(Equal(int64(2)))
	stats := s.Stats()

	// Within Interval: no request, and the new tag is not seen yet.
	reg.PushImage(t, "app", "1.1.0", epoch)
	clock.Step(time.Minute - time.Nanosecond)
	tags, err = s.Tags(ctx, repo, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("1.0.0"))
	g.Expect(wire.Load()).To(Equal(sent))

	// After it: one list, and no new ping (the registry session is kept).
	clock.Step(time.Nanosecond)
	tags, err = s.Tags(ctx, repo, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("1.0.0", "1.1.0"))
	g.Expect(wire.Load()).To(Equal(sent + 1))
	g.Expect(s.Stats().TagLists).To(Equal(int64(2)))
	g.Expect(s.Stats().Sub(stats).Requests()).To(Equal(int64(1)))
}

func TestTagsSharedInFlight(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if isTagList(r) {
			once.Do(func() { close(arrived) })
			<-release
		}
		next.ServeHTTP(w, r)
	})
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})
	repo := repository(t, host, "app")

	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := s.Tags(context.Background(), repo, Options{})
			errs <- err
		})
	}
	<-arrived
	// Callers that came while the list was held joined it; later ones find
	// the cache. Either way one list.
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(s.Stats().TagLists).To(Equal(int64(1)))
}

func TestCreatedCache(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	first := reg.PushImage(t, "app", "main", epoch)
	clock := newClock()
	s := New(Config{Addresses: allowLoopback, Interval: time.Minute, DigestRefresh: time.Hour, Clock: clock})
	ctx := context.Background()
	tag, err := name.NewTag(reg.Host() + "/app:main")
	g.Expect(err).NotTo(HaveOccurred())
	expect := func(created time.Time, digest any, manifests, blobs int64) {
		t.Helper()
		before := s.Stats()
		c, d, err := s.Created(ctx, tag, Options{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c).To(BeTemporally("==", created))
		g.Expect(d).To(Equal(digest))
		delta := s.Stats().Sub(before)
		g.Expect(delta.Manifests).To(Equal(manifests), "manifest requests")
		g.Expect(delta.Blobs).To(Equal(blobs), "blob requests")
		g.Expect(delta.TagLists).To(BeZero())
	}

	// A new tag: its manifest and config.
	expect(epoch, first, 1, 1)
	// Known: nothing.
	expect(epoch, first, 0, 0)

	// The tag moves; within DigestRefresh the old answer stands.
	moved := reg.PushImage(t, "app", "main", epoch.Add(time.Hour))
	clock.Step(30 * time.Minute)
	expect(epoch, first, 0, 0)
	// Past it, a HEAD sees the new digest: its manifest and config follow.
	clock.Step(30 * time.Minute)
	expect(epoch.Add(time.Hour), moved, 2, 1)
	// Past it again, unmoved: one HEAD.
	clock.Step(time.Hour)
	expect(epoch.Add(time.Hour), moved, 1, 0)

	// Another tag of a known digest: its manifest only, the config is known.
	img := newImage(t, epoch.Add(3*time.Hour))
	other, err := name.NewTag(reg.Host() + "/app:other")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(tag, img, reg.RemoteOptions()...)).To(Succeed())
	g.Expect(remote.Write(other, img, reg.RemoteOptions()...)).To(Succeed())
	clock.Step(time.Hour)
	d, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	expect(epoch.Add(3*time.Hour), d, 2, 1)
	before := s.Stats()
	c, _, err := s.Created(ctx, other, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(BeTemporally("==", epoch.Add(3*time.Hour)))
	g.Expect(s.Stats().Sub(before)).To(Equal(Stats{Manifests: 1}))
}

func TestNewestSteadyState(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	for i, tag := range []string{"main-1", "main-2", "main-3", "1.0.0"} {
		reg.PushImage(t, "app", tag, epoch.Add(time.Duration(i)*time.Hour))
	}
	clock := newClock()
	s := New(Config{Addresses: allowLoopback, Interval: time.Minute, Clock: clock})
	repo := repository(t, reg.Host(), "app")
	ctx := context.Background()
	filter := mustFilter(t, "main-*")

	got, err := s.Newest(ctx, repo, filter, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("main-3"))
	g.Expect(s.Stats().Blobs).To(Equal(int64(3)))

	// Within the interval: nothing.
	before := s.Stats()
	got, err = s.Newest(ctx, repo, filter, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("main-3"))
	g.Expect(s.Stats().Sub(before).Requests()).To(BeZero())

	// Next interval: the tag list alone, until a new tag costs its manifest
	// and config.
	clock.Step(time.Minute)
	before = s.Stats()
	_, err = s.Newest(ctx, repo, filter, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Stats().Sub(before)).To(Equal(Stats{TagLists: 1}))

	reg.PushImage(t, "app", "main-4", epoch.Add(9*time.Hour))
	clock.Step(time.Minute)
	before = s.Stats()
	got, err = s.Newest(ctx, repo, filter, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("main-4"))
	g.Expect(s.Stats().Sub(before)).To(Equal(Stats{TagLists: 1, Manifests: 1, Blobs: 1}))
}
