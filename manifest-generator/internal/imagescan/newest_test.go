package imagescan

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func mustFilter(t *testing.T, s string) Filter {
	t.Helper()
	f, err := ParseFilter(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewestSemver(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	// The highest version, not the newest image: 1.10.0 was pushed first and
	// created earliest.
	for i, tag := range []string{"1.10.0", "1.9.0", "v1.2.3", "2.0.0", "latest", "1.11.0-rc.1"} {
		reg.PushImage(t, "app", tag, epoch.Add(time.Duration(i)*time.Hour))
	}
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})
	repo := repository(t, reg.Host(), "app")
	ctx := context.Background()

	for filter, want := range map[string]string{
		"semver:~1":         "1.10.0",
		"semver:>=1.0.0":    "2.0.0",
		"semver:<1.5":       "v1.2.3",
		"semver:>=1.11.0-0": "2.0.0",
		"semver:~1.11.0-0":  "1.11.0-rc.1",
	} {
		got, err := s.Newest(ctx, repo, mustFilter(t, filter), Options{})
		g.Expect(err).NotTo(HaveOccurred(), filter)
		g.Expect(got).To(Equal(want), filter)
	}
	// Semver needs no image config: one tag list was all.
	g.Expect(s.Stats().Manifests).To(BeZero())
	g.Expect(s.Stats().Blobs).To(BeZero())
	g.Expect(s.Stats().TagLists).To(Equal(int64(1)))

	_, err := s.Newest(ctx, repo, mustFilter(t, "semver:>=3"), Options{})
	g.Expect(errors.Is(err, ErrNoMatchingTag)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(`no tag of ` + reg.Host() + `/app matches semver:>=3`))
	var nm *NoMatchError
	g.Expect(errors.As(err, &nm)).To(BeTrue())
}

func TestNewestGlobByCreationTime(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	// main-zzz sorts last but was built first: creation time wins.
	reg.PushImage(t, "app", "main-zzz", epoch)
	reg.PushImage(t, "app", "main-aaa", epoch.Add(2*time.Hour))
	reg.PushImage(t, "app", "main-mmm", epoch.Add(time.Hour))
	reg.PushImage(t, "app", "other-new", epoch.Add(5*time.Hour))
	// Equal times: the lexically greatest tag.
	reg.PushImage(t, "app", "rel-a", epoch.Add(3*time.Hour))
	reg.PushImage(t, "app", "rel-b", epoch.Add(3*time.Hour))
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})
	repo := repository(t, reg.Host(), "app")
	ctx := context.Background()

	got, err := s.Newest(ctx, repo, mustFilter(t, "glob:main-*"), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("main-aaa"))

	got, err = s.Newest(ctx, repo, mustFilter(t, "rel-*"), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("rel-b"))

	got, err = s.Newest(ctx, repo, mustFilter(t, "*"), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("other-new"))

	_, err = s.Newest(ctx, repo, mustFilter(t, "release-*"), Options{})
	g.Expect(errors.Is(err, ErrNoMatchingTag)).To(BeTrue(), "%v", err)
}

func TestNewestRegex(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "build-100", epoch.Add(2*time.Hour))
	reg.PushImage(t, "app", "build-99", epoch.Add(3*time.Hour))
	reg.PushImage(t, "app", "build-101-debug", epoch.Add(4*time.Hour))
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})
	repo := repository(t, reg.Host(), "app")

	got, err := s.Newest(context.Background(), repo, mustFilter(t, "regex:^build-[0-9]+$"), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("build-99"))
	// Unanchored: the debug build matches too.
	got, err = s.Newest(context.Background(), repo, mustFilter(t, "regexp:build-[0-9]+"), Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("build-101-debug"))
}

func TestCreatedImageIndex(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	amd64 := epoch.Add(7 * time.Hour)
	withAMD64 := pushIndex(t, reg, "multi", "both", map[string]time.Time{
		"linux/arm64": epoch.Add(time.Hour), "linux/amd64": amd64,
	}, []string{"linux/arm64", "linux/amd64"})
	pushIndex(t, reg, "multi", "arm", map[string]time.Time{
		"linux/arm64": epoch.Add(2 * time.Hour), "linux/arm/v7": epoch.Add(3 * time.Hour),
	}, []string{"linux/arm64", "linux/arm/v7"})
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})
	ctx := context.Background()

	tag, err := name.NewTag(reg.Host() + "/multi:both")
	g.Expect(err).NotTo(HaveOccurred())
	created, digest, err := s.Created(ctx, tag, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTemporally("==", amd64))
	g.Expect(digest).To(Equal(withAMD64))

	// Without linux/amd64, the first image.
	tag, err = name.NewTag(reg.Host() + "/multi:arm")
	g.Expect(err).NotTo(HaveOccurred())
	created, _, err = s.Created(ctx, tag, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTemporally("==", epoch.Add(2*time.Hour)))
}
