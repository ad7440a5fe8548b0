package build

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluice-gitops/sluice/shared/artifact"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// DefaultMaxCheckouts is the number of checkouts kept on disk when Options.MaxCheckouts is 0.
const DefaultMaxCheckouts = 16

// Options configure a Builder; they are the controller's flags.
type Options struct {
	// StoragePath is the directory that holds the checkouts (--storage-path), created if missing.
	// What a previous process left in it (checkouts and staging directories) is deleted by New;
	// other names are left alone. Two Builders must not share it.
	StoragePath string
	// CacheSize is the number of build results kept in memory, least recently used out
	// (--generator-cache-size); 0 turns the cache off.
	CacheSize int
	// CacheMaxSize bounds the memory the cached results take together, in bytes as estimated
	// from their objects (--generator-cache-max-size; DefaultCacheMaxSize when 0): the least
	// recently used are evicted to stay within it, and a larger result is not cached.
	CacheMaxSize int64
	// MaxCheckouts is the number of checkouts kept on disk, the most recently used
	// (DefaultMaxCheckouts when 0); checkouts in use are never deleted.
	MaxCheckouts int
	// MaxOutput caps the standard output of a generator in bytes (--max-output-size;
	// fluxyaml.DefaultMaxOutput when 0).
	MaxOutput int64
	// DefaultTimeout of a generator command when spec.timeout is unset (--sync-timeout;
	// fluxyaml.DefaultTimeout, one minute, when 0).
	DefaultTimeout time.Duration
	// Path is the PATH commands run with (fluxyaml.DefaultPath when empty).
	Path string
	// Fetcher downloads the artifacts (a Fetcher with its defaults when nil).
	Fetcher *artifact.Fetcher
	// Scheme holds the built-in kinds that patch files merge strategically (client-go's scheme
	// when nil); see patch.Apply.
	Scheme *runtime.Scheme
	// Runner runs the generators, in a private copy of the checkout, in a process without the
	// controller's credentials (required).
	Runner *runner.Client
	// Limits bound what the generators of one target path produce together
	// (--max-generators, --max-generation-output-size, --max-objects, --max-output-nodes).
	Limits fluxyaml.Limits
}

// Builder builds the objects of ManifestGenerations. It is safe for concurrent use.
type Builder struct {
	opts      Options
	cache     *resultCache // nil when the cache is off
	checkouts *checkouts
}

// New returns a Builder; it prepares the storage path.
func New(opts Options) (*Builder, error) {
	if opts.StoragePath == "" {
		return nil, fmt.Errorf("the storage path is required")
	}
	if opts.Runner == nil {
		return nil, fmt.Errorf("a runner is required: generators never run in the controller's process")
	}
	if opts.Fetcher == nil {
		opts.Fetcher = &artifact.Fetcher{}
	}
	if opts.MaxCheckouts <= 0 {
		opts.MaxCheckouts = DefaultMaxCheckouts
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = fluxyaml.DefaultTimeout
	}
	if opts.CacheMaxSize < 0 {
		return nil, fmt.Errorf("the generator cache's size must not be negative")
	}
	if opts.CacheMaxSize == 0 {
		opts.CacheMaxSize = DefaultCacheMaxSize
	}
	cs, err := newCheckouts(opts.StoragePath, opts.Fetcher, opts.MaxCheckouts)
	if err != nil {
		return nil, err
	}
	b := &Builder{opts: opts, checkouts: cs}
	if opts.CacheSize > 0 {
		b.cache = newResultCache(opts.CacheSize, opts.CacheMaxSize)
	}
	return b, nil
}

// Close deletes the checkouts. Call it after the last Build; a checkout still in use is left.
func (b *Builder) Close() error { return b.checkouts.close() }

// Result is what a Build produced.
type Result struct {
	// Objects to apply, in the order the generators printed them (raw mode: files in lexical
	// order). They belong to the caller.
	Objects []*unstructured.Unstructured
	// ConfigFile is the .flux.yaml used, relative to the root of the artifact; "" in raw mode.
	ConfigFile string
	// Dropped are the patch file entries whose resource is not generated any more (the caller
	// warns about them); also returned by a cache hit.
	Dropped []patch.ID
	// FromCache is set when the result of an earlier Build was reused and no command ran.
	FromCache bool
	// CommandsRun is the number of generator commands this Build ran.
	CommandsRun int
}

// Timeout is the sync timeout of spec, also the timeout of its commands without their own:
// spec.timeout, or --sync-timeout when unset.
func (b *Builder) Timeout(spec generatorv1.ManifestGenerationSpec) time.Duration {
	if spec.Timeout != nil && spec.Timeout.Duration > 0 {
		return spec.Timeout.Duration
	}
	return b.opts.DefaultTimeout
}

// Build returns the objects that spec's target path of art (the source's status.artifact, as
// artifact.FromObject reads it) holds. Its URL, Digest and Revision are used.
//
// A result is cached by artifact digest, target path, spec.env and the command timeout: every
// file the generators can read is part of the artifact, so the digest stands for the .flux.yaml
// and the patch file too, and a cache hit neither touches the checkout nor runs a command. On a
// miss the artifact is fetched, once per digest for all ManifestGenerations of it, into a shared
// checkout under the storage path, which only the controller's user can read; then .flux.yaml is
// looked up for the target path and its generators run in the runner, on a private copy of the
// checkout that nothing else sees and that is deleted afterwards, or the YAML files under the
// target path are read when there is no .flux.yaml; a patchUpdated patch file is applied.
//
// An empty result is refused with ErrEmpty when spec.prune is on and spec.allowEmpty is off.
// IsTerminal tells the errors only a new revision fixes from those to retry; a failing command
// is a *fluxyaml.CommandError.
//
// owner is the ManifestGeneration: its session runs in its namespace (in a pod of its own with
// session pods), and its results are cached for its namespace alone.
func (b *Builder) Build(ctx context.Context, owner runner.Owner, art meta.Artifact, spec generatorv1.ManifestGenerationSpec) (*Result, error) {
	d, err := artifact.ParseDigest(art.Digest)
	if err != nil {
		return nil, fmt.Errorf("artifact of revision '%s': %w", art.Revision, err)
	}
	target, err := targetPath(spec.Path)
	if err != nil {
		return nil, terminal(err)
	}
	env, err := envOf(spec.Env)
	if err != nil {
		return nil, terminal(err)
	}
	timeout := b.Timeout(spec)

	var key string
	if b.cache != nil {
		key = cacheKey(owner.Namespace, d.String(), target, env, timeout)
		if v, ok := b.cache.Get(key); ok {
			return checkEmpty(v.result(), spec)
		}
	}

	co, err := b.checkouts.acquire(ctx, art, d.Encoded())
	if err != nil {
		return nil, err
	}
	defer b.checkouts.release(co)

	session, err := b.opts.Runner.Session(co.dir, runner.Options{Path: b.opts.Path, Env: env, DefaultTimeout: timeout, MaxOutput: b.opts.MaxOutput,
		Egress: spec.Egress, Owner: owner})
	if errors.Is(err, runner.ErrEgressNotAllowed) {
		return nil, terminal(err)
	}
	if err != nil {
		return nil, err
	}
	defer session.Close()
	res, err := generate(ctx, session, co.dir, target, b.opts.Scheme, b.opts.Limits)
	if err != nil {
		return nil, err
	}
	if b.cache != nil {
		b.cache.Add(key, newCached(res))
	}
	return checkEmpty(res, spec)
}

func checkEmpty(res *Result, spec generatorv1.ManifestGenerationSpec) (*Result, error) {
	prune := spec.Prune == nil || *spec.Prune
	if len(res.Objects) == 0 && prune && !spec.AllowEmpty {
		return nil, ErrEmpty
	}
	return res, nil
}

// targetPath cleans spec.path (default ./) into a path relative to the artifact root, as
// fluxyaml reads it, so that "./staging", "staging/" and "staging" share a cache entry.
func targetPath(p string) (string, error) {
	if p == "" {
		p = generatorv1.DefaultPath
	}
	clean := filepath.Clean(strings.TrimLeft(p, "/"))
	if clean != "." && !filepath.IsLocal(clean) {
		return "", fmt.Errorf("spec.path '%s' is outside the artifact", p)
	}
	return clean, nil
}

// envOf turns spec.env into the commands' variables. Admission refuses PATH and HOME; FLUX_*
// (the updaters' request) is refused here.
func envOf(vars []generatorv1.EnvVar) (map[string]string, error) {
	env := make(map[string]string, len(vars))
	for _, v := range vars {
		if v.Name == "" || strings.ContainsAny(v.Name, "=\x00") {
			return nil, fmt.Errorf("spec.env: invalid variable name %q", v.Name)
		}
		if fluxyaml.IsReservedEnv(v.Name) {
			return nil, fmt.Errorf("spec.env: %s is reserved: PATH and HOME are set by the controller, FLUX_* by the updaters", v.Name)
		}
		env[v.Name] = v.Value
	}
	return env, nil
}
