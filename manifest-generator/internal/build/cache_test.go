package build

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
)

// A second sync of the same revision reuses the objects: no command runs.
func TestBuildCacheHitRunsNoCommand(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, stagingLayout(countingKustomize)))
	counter := proctest.SharedDir(t)
	b := newBuilder(t, Options{})
	spec := specOf("./staging", "COUNTER_DIR", counter)

	first, err := b.Build(context.Background(), testOwner, art, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.FromCache).To(BeFalse())
	g.Expect(first.CommandsRun).To(Equal(1))
	g.Expect(runs(t, counter)).To(Equal(1))

	// The caller owns the objects it gets: changing them does not change the next result.
	want := deepCopies(first.Objects)
	g.Expect(unstructured.SetNestedField(first.Objects[0].Object, "changed", "metadata", "name")).To(Succeed())

	for _, path := range []string{"./staging", "staging", "staging/", "/staging"} {
		again, err := b.Build(context.Background(), testOwner, art, specOf(path, "COUNTER_DIR", counter))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.FromCache).To(BeTrue(), "path %q", path)
		g.Expect(again.CommandsRun).To(BeZero())
		g.Expect(again.ConfigFile).To(Equal(".flux.yaml"))
		g.Expect(again.Objects).To(Equal(want))
	}
	g.Expect(runs(t, counter)).To(Equal(1), "a cache hit must not run the generator")
	g.Expect(srv.requests(art)).To(Equal(1))
}

// What the generators see is part of the key: another env, path, timeout or revision misses.
func TestBuildCacheMisses(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	dir := writeTree(t, stagingLayout(countingKustomize))
	r1 := srv.publish(t, "r1", dir)
	counter := proctest.SharedDir(t)
	b := newBuilder(t, Options{})
	build := func(art meta.Artifact, f specFields) bool {
		t.Helper()
		s := specOf("staging", "COUNTER_DIR", counter)
		if f.path != "" {
			s.Path = f.path
		}
		s.Env = append(s.Env, f.env...)
		s.Timeout = f.timeout
		res, err := b.Build(context.Background(), testOwner, art, s)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.FromCache).To(Equal(res.CommandsRun == 0))
		return res.FromCache
	}
	none := specFields{}

	g.Expect(build(r1, none)).To(BeFalse())
	g.Expect(build(r1, none)).To(BeTrue())

	withEnv := specFields{env: envVars("REGION", "eu")}
	g.Expect(build(r1, withEnv)).To(BeFalse(), "another spec.env")
	g.Expect(build(r1, withEnv)).To(BeTrue())

	production := specFields{path: "production"}
	g.Expect(build(r1, production)).To(BeFalse(), "another path")
	g.Expect(build(r1, production)).To(BeTrue())

	timeout := specFields{timeout: &metav1.Duration{Duration: 30 * time.Second}}
	g.Expect(build(r1, timeout)).To(BeFalse(), "another timeout")

	// A new commit is a new artifact, even when it changes no file the generators read.
	writeTreeInto(t, dir, map[string]string{"README.md": "new commit\n"})
	r2 := srv.publish(t, "r2", dir)
	g.Expect(r2.Digest).NotTo(Equal(r1.Digest))
	g.Expect(build(r2, none)).To(BeFalse(), "another revision")

	g.Expect(runs(t, counter)).To(Equal(5))
}

// With --generator-cache-size=0 every Build runs the generators, from the same checkout.
func TestBuildCacheOff(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, stagingLayout(countingKustomize)))
	counter := proctest.SharedDir(t)
	b := newBuilder(t, Options{CacheSize: -1})

	for i := 1; i <= 2; i++ {
		res, err := b.Build(context.Background(), testOwner, art, specOf("staging", "COUNTER_DIR", counter))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.FromCache).To(BeFalse())
		g.Expect(res.CommandsRun).To(Equal(1))
		g.Expect(runs(t, counter)).To(Equal(i))
	}
	g.Expect(srv.requests(art)).To(Equal(1), "the checkout is reused")
}

// --generator-cache-max-size bounds the memory of the cache: a result larger than it is not
// cached (every sync runs its generators), and results that do not fit together evict the least
// recently used.
func TestBuildCacheMaxSize(t *testing.T) {
	g := NewWithT(t)
	configMap := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  blob: %s\n", name, strings.Repeat("x", size))
	}
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml": "version: 1\ncommandUpdated:\n  generators:\n" +
			"    - command: mktemp \"$COUNTER_DIR/run.XXXXXX\" >/dev/null && cat \"$OUTPUT\"\n",
		"small.yaml":  configMap("small", 1000),
		"big.yaml":    configMap("big", 600<<10),
		"half-1.yaml": configMap("half-1", 300<<10),
		"half-2.yaml": configMap("half-2", 300<<10),
	}))
	counter := proctest.SharedDir(t)
	b := newBuilder(t, Options{CacheMaxSize: 512 << 10})
	build := func(output string) bool {
		t.Helper()
		res, err := b.Build(context.Background(), testOwner, art, specOf(".", "COUNTER_DIR", counter, "OUTPUT", output))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Objects).To(HaveLen(1))
		return res.FromCache
	}

	g.Expect(build("small.yaml")).To(BeFalse())
	g.Expect(build("small.yaml")).To(BeTrue())

	g.Expect(build("big.yaml")).To(BeFalse())
	g.Expect(build("big.yaml")).To(BeFalse(), "a result over --generator-cache-max-size is not cached")
	g.Expect(build("small.yaml")).To(BeTrue(), "nor does it evict the results that fit")

	g.Expect(build("half-1.yaml")).To(BeFalse())
	g.Expect(build("small.yaml")).To(BeTrue())
	g.Expect(build("half-2.yaml")).To(BeFalse())
	g.Expect(build("small.yaml")).To(BeTrue(), "the most recently used stays")
	g.Expect(build("half-1.yaml")).To(BeFalse(), "the least recently used was evicted")
	g.Expect(runs(t, counter)).To(Equal(6))
}

// A negative --generator-cache-max-size is refused.
func TestBuildCacheMaxSizeNegative(t *testing.T) {
	_, err := New(Options{StoragePath: t.TempDir(), Runner: testRunner, CacheSize: 1, CacheMaxSize: -1})
	NewWithT(t).Expect(err).To(MatchError("the generator cache's size must not be negative"))
}
