package build

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
)

// cacheKey identifies a build: the namespace it ran for (its commands ran there, under that
// namespace's policies, so another tenant's identical artifact does not share its output), what
// the generators read (the artifact, hence every file in it,
// .flux.yaml and the patch file included, and the target path) and how they run (spec.env and the
// timeout). The PATH, output limit and scheme are the Builder's and the same for all its builds.
// spec.prune and spec.allowEmpty are not part of it: they only decide whether an empty result is
// refused, which Build checks on cached results too.
func cacheKey(namespace, dgst, target string, env map[string]string, timeout time.Duration) string {
	h := sha256.New()
	field(h, namespace)
	field(h, dgst)
	field(h, target)
	field(h, timeout.String())
	names := make([]string, 0, len(env))
	for name := range env {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		field(h, name)
		field(h, env[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// field writes s length-prefixed, so that no two lists of fields hash the same bytes.
func field(h hash.Hash, s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }

// cached is a build result kept in the cache. Its objects are never handed out: every hit gets
// deep copies, so a caller changing the objects it applies cannot change the next sync's.
type cached struct {
	objects    []*unstructured.Unstructured
	configFile string
	dropped    []patch.ID
}

func newCached(r *Result) *cached {
	return &cached{objects: deepCopies(r.Objects), configFile: r.ConfigFile, dropped: append([]patch.ID(nil), r.Dropped...)}
}

func (c *cached) result() *Result {
	return &Result{
		Objects:    deepCopies(c.objects),
		ConfigFile: c.configFile,
		Dropped:    append([]patch.ID(nil), c.dropped...),
		FromCache:  true,
	}
}

func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
