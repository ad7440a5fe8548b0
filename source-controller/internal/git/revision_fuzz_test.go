package git

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
)

// FuzzRevision resolves a fuzzed semver range against fuzzed tag names (one per line, as a
// remote lists them). A refusal is a range that does not parse or ErrRefNotFound; a resolved
// revision names a listed tag, at its commit, whose version is in the range and highest among
// the tags in range, and its revision string `<tag>@sha1:<hex>` parses back to that tag and
// commit.
func FuzzRevision(f *testing.F) {
	for _, s := range []struct{ rng, tags string }{
		{">=1.0.0", "v1.0.0\nv1.1.0\nv2.0.0-rc.1\nlatest"},
		{"~1.2", "1.2.0\n1.2.9\n1.3.0\nv1.2.10"},
		{"1.x", "1.0\n1\nv1.0.0+build.1\n1.0.0+build.2"},
		{">=2.0.0-0", "2.0.0-alpha\n2.0.0-beta.2\n2.0.0-beta.10"},
		{"*", "v0.0.1\nrelease-1\n"},
		{"^0.1.0", "0.1.0\n0.1.1\n0.2.0"},
		{"< 1", "0.9.9\nv0.0.0\n"},
		{">= 1.0.0 <2.0.0 || 3.x", "1.5.0\n2.5.0\n3.1.4\n3.1.4-rc.1"},
		{"not a range", "1.0.0"},
		{"", "1.0.0"},
		{"1.0.0", ""},
		{"=v1.0.0", "v1.0.0\n1.0.0"},
	} {
		f.Add(s.rng, s.tags)
	}
	f.Fuzz(func(t *testing.T, rng, tags string) {
		if len(rng)+len(tags) > 1024 {
			return
		}
		refs := map[plumbing.ReferenceName]string{plumbing.NewBranchReferenceName("main"): commitOf("main")}
		for tag := range strings.SplitSeq(tags, "\n") {
			refs[plumbing.NewTagReferenceName(tag)] = commitOf(tag)
		}
		rev, err := resolveSemver(refs, rng)
		if err != nil {
			if _, cerr := semver.NewConstraint(rng); cerr == nil && !errors.Is(err, ErrRefNotFound) {
				t.Fatalf("%q: %v", rng, err)
			}
			return
		}
		name := plumbing.NewTagReferenceName(rev.Name)
		if rev.RefName != name || refs[name] == "" || rev.Hash != refs[name] || rev.Pinned {
			t.Fatalf("%q resolved to %+v, not a listed tag at its commit", rng, rev)
		}
		constraint, err := semver.NewConstraint(rng)
		if err != nil {
			t.Fatalf("%q resolved, but does not parse: %v", rng, err)
		}
		v, err := semver.NewVersion(rev.Name)
		if err != nil || !constraint.Check(v) {
			t.Fatalf("%q resolved to tag %q, out of range (%v)", rng, rev.Name, err)
		}
		for tag := range strings.SplitSeq(tags, "\n") {
			if w, err := semver.NewVersion(tag); err == nil && constraint.Check(w) && w.GreaterThan(v) {
				t.Fatalf("%q resolved to %q, but %q is in range and higher", rng, rev.Name, tag)
			}
		}
		s := rev.String()
		gotName, gotHash, ok := parseRevision(s)
		if !ok || gotName != rev.Name || gotHash != rev.Hash {
			t.Fatalf("revision %q parses to %q, %q (%t), want %q, %q", s, gotName, gotHash, ok, rev.Name, rev.Hash)
		}
	})
}

// commitOf is a made-up commit hash for a reference.
func commitOf(name string) string {
	sum := sha1.Sum([]byte(name))
	return hex.EncodeToString(sum[:])
}

// parseRevision reads Flux's revision format, `<name>@sha1:<hex>` or `sha1:<hex>`, as a
// consumer of the artifact does: the hash is after the last "@sha1:".
func parseRevision(s string) (name, hash string, ok bool) {
	if i := strings.LastIndex(s, "@sha1:"); i >= 0 {
		return s[:i], s[i+len("@sha1:"):], true
	}
	hash, ok = strings.CutPrefix(s, "sha1:")
	return "", hash, ok
}
