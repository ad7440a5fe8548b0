package imagescan

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// epoch is a fixed base for creation times and the fake clock.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newClock is the Scanner's clock in tests, at epoch, moved by hand (Step).
func newClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(epoch) }

// newImage is a random single-layer image created at created.
func newImage(t testing.TB, created time.Time) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: created})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// pushIndex pushes an image index of the given platforms ("os/arch"), each
// image created at its time, and returns the index's digest.
func pushIndex(t testing.TB, reg *testserver.Registry, repo, tag string, platforms map[string]time.Time, order []string) v1.Hash {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, p := range order {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        newImage(t, platforms[p]),
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}
	idx := mutate.AppendManifests(empty.Index, adds...)
	ref, err := name.NewTag(reg.Host() + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, reg.RemoteOptions()...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func repository(t testing.TB, host, repo string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// allowLoopback is the address policy of the tests: their registries are on loopback, which
// is refused by default.
var allowLoopback = AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// counting puts a proxy counting the requests it receives in front of reg, a check of Stats
// from outside; it returns the proxy's host and the count.
func counting(t testing.TB, reg *testserver.Registry) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		n.Add(1)
		next.ServeHTTP(w, r)
	})
	return host, &n
}

func parseRepo(ref string) (name.Repository, error) { return name.NewRepository(ref) }

// proxy puts handler in front of the real registry: handler answers what
// it wants and passes the rest to next. It returns the proxy's host, to
// name repositories by.
func proxy(t testing.TB, reg *testserver.Registry, handler func(w http.ResponseWriter, r *http.Request, next http.Handler)) string {
	t.Helper()
	target, err := url.Parse("http://" + reg.Host())
	if err != nil {
		t.Fatal(err)
	}
	next := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler(w, r, next)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func isTagList(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/tags/list") }
