package stresstest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sluice-gitops/sluice/shared/testserver/ociregistry"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
)

// The caches of one Scanner are shared by every tenant's scans, and keyed by the credentials
// that read them. This stress test replays the class of Argo CD's CVE-2025-55191 (a race in a
// shared credentials cache): many scans at once, with the right, a wrong and no credentials for
// the same repository, while the cache entries expire under them. Every caller gets the answer
// of its own credentials, never one that another's filled, and under the race detector (`make
// test-race`, part of `make test`) no data race.
//
// Checked against a reintroduced bug: with the cache keyed by repository alone (c.credentials
// dropped from the key in tagsOf), the callers without credentials get the tag list, and this
// test fails.
func TestCredentialsCacheUnderConcurrency(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(ociregistry.Handler("bot", "s3cret"))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	push(t, host, "team/app:1.0.0", epoch)
	push(t, host, "team/app:1.1.0", epoch.Add(time.Hour))
	repo, err := name.NewRepository(host+"/team/app", name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	clock := clocktesting.NewFakeClock(epoch)
	s := imagescan.New(imagescan.Config{Addresses: imagescan.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, Clock: clock, Interval: time.Minute})
	right := &authn.Basic{Username: "bot", Password: "s3cret"}
	wrong := &authn.Basic{Username: "bot", Password: "guess"}
	filter, err := imagescan.ParseFilter("glob:*")
	g.Expect(err).NotTo(HaveOccurred())

	const rounds, callers = 20, 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	report := func(p string) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, p)
	}
	for round := range rounds {
		for i := range callers {
			wg.Go(func() {
				ctx := context.Background()
				opts := imagescan.Options{Insecure: true}
				switch i % 3 {
				case 0:
					opts.Auth = right
				case 1:
					opts.Auth = wrong
				}
				var err error
				var tag string
				if round%2 == 0 {
					tag, err = s.Newest(ctx, repo, filter, opts)
				} else {
					var tags []string
					if tags, err = s.Tags(ctx, repo, opts); err == nil && len(tags) > 0 {
						tag = tags[len(tags)-1]
					}
				}
				var rerr *imagescan.RegistryError
				switch {
				case i%3 == 0 && (err != nil || tag == ""):
					report("the right credentials got " + errString(err))
				case i%3 != 0 && err == nil:
					report("wrong or no credentials got the tags of team/app")
				case i%3 != 0 && !errors.As(err, &rerr):
					report("wrong or no credentials: not the registry's refusal: " + err.Error())
				}
			})
		}
		if round%5 == 4 {
			clock.Step(time.Minute) // the entries expire while scans run
		}
	}
	wg.Wait()
	g.Expect(problems).To(BeEmpty())
}

func errString(err error) string {
	if err == nil {
		return "no tag"
	}
	return err.Error()
}

// push pushes a small random image created at created, with the registry's credentials.
func push(t *testing.T, host, ref string, created time.Time) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err == nil {
		img, err = mutate.CreatedAt(img, v1.Time{Time: created})
	}
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host+"/"+ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: "bot", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}
}
