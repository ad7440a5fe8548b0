package git

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// DefaultBranch is checked out when the spec names no reference.
const DefaultBranch = "master"

// ErrRefNotFound: the remote has no such branch, tag, reference or matching semver tag.
var ErrRefNotFound = errors.New("reference not found")

// Revision is a resolved reference: Flux's revision format is `<name>@sha1:<hex>`, or
// `sha1:<hex>` for a bare commit.
type Revision struct {
	// Name is the branch, tag or reference name; empty for a bare commit.
	Name string
	// RefName is the full reference to fetch; empty for a bare commit.
	RefName plumbing.ReferenceName
	// Hash is the commit.
	Hash string
	// Pinned: the spec names the commit (spec.ref.commit), not just a reference to follow.
	Pinned bool
}

func (r Revision) String() string {
	if r.Hash == "" { // not resolved yet (Unlisted)
		return r.Name
	}
	if r.Name == "" {
		return "sha1:" + r.Hash
	}
	return r.Name + "@sha1:" + r.Hash
}

// WithHash is the same reference at another commit (the remote moved between listing and cloning).
func (r Revision) WithHash(hash string) Revision {
	r.Hash = hash
	return r
}

// Resolve finds the commit a reference points to on the remote, listing its references
// (ls-remote) without cloning. A commit ref resolves without contacting the remote.
func Resolve(ctx context.Context, remote Remote, ref *sourcev1.GitRepositoryRef) (Revision, error) {
	if ref == nil {
		ref = &sourcev1.GitRepositoryRef{}
	}
	if ref.Commit != "" {
		rev := Revision{Hash: ref.Commit, Pinned: true}
		if ref.Branch != "" {
			rev.Name, rev.RefName = ref.Branch, plumbing.NewBranchReferenceName(ref.Branch)
		}
		return rev, nil
	}
	refs, err := listRefs(ctx, remote)
	if err != nil {
		return Revision{}, err
	}
	switch {
	case ref.Name != "":
		return lookup(refs, ref.Name, plumbing.ReferenceName(ref.Name), "reference")
	case ref.SemVer != "":
		return resolveSemver(refs, ref.SemVer)
	case ref.Tag != "":
		return lookup(refs, ref.Tag, plumbing.NewTagReferenceName(ref.Tag), "tag")
	default:
		branch := ref.Branch
		if branch == "" {
			branch = DefaultBranch
		}
		return lookup(refs, branch, plumbing.NewBranchReferenceName(branch), "branch")
	}
}

// Unlisted is the revision to clone for a reference that needs no listing of the remote's
// references: a branch or a tag, whose clone tells its commit (the returned Hash is empty until
// Checkout fills it in), and a commit. A semver range or a reference name needs Resolve. A first
// fetch so costs one exchange with the remote less: no ls-remote before the clone.
func Unlisted(ref *sourcev1.GitRepositoryRef) (Revision, bool) {
	if ref == nil {
		ref = &sourcev1.GitRepositoryRef{}
	}
	switch {
	case ref.Commit != "":
		rev, err := Resolve(context.Background(), Remote{}, ref)
		return rev, err == nil
	case ref.SemVer != "" || ref.Name != "":
		return Revision{}, false
	case ref.Tag != "":
		return Revision{Name: ref.Tag, RefName: plumbing.NewTagReferenceName(ref.Tag)}, true
	default:
		branch := ref.Branch
		if branch == "" {
			branch = DefaultBranch
		}
		return Revision{Name: branch, RefName: plumbing.NewBranchReferenceName(branch)}, true
	}
}

// listRefs returns the remote's references by name, annotated tags peeled to their commit.
func listRefs(ctx context.Context, remote Remote) (map[plumbing.ReferenceName]string, error) {
	r := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{remote.URL}})
	list, err := r.ListContext(ctx, &gogit.ListOptions{
		Auth: remote.Auth.Method, CABundle: remote.Auth.CABundle, ProxyOptions: remote.Proxy, PeelingOption: gogit.AppendPeeled,
	})
	if err != nil {
		return nil, err
	}
	refs := map[plumbing.ReferenceName]string{}
	for _, r := range list {
		if r.Type() == plumbing.HashReference {
			refs[r.Name()] = r.Hash().String()
		}
	}
	// A peeled tag `refs/tags/v1^{}` names the commit of the annotated tag `refs/tags/v1`.
	for name, hash := range refs {
		if base, ok := strings.CutSuffix(name.String(), "^{}"); ok {
			refs[plumbing.ReferenceName(base)] = hash
			delete(refs, name)
		}
	}
	return refs, nil
}

func lookup(refs map[plumbing.ReferenceName]string, name string, full plumbing.ReferenceName, kind string) (Revision, error) {
	hash, ok := refs[full]
	if !ok {
		return Revision{}, fmt.Errorf("%w: %s '%s' does not exist in the repository", ErrRefNotFound, kind, name)
	}
	return Revision{Name: name, RefName: full, Hash: hash}, nil
}

// resolveSemver picks the highest tag that is a semantic version within the range.
func resolveSemver(refs map[plumbing.ReferenceName]string, rng string) (Revision, error) {
	constraint, err := semver.NewConstraint(rng)
	if err != nil {
		return Revision{}, fmt.Errorf("semver range '%s' does not parse: %w", rng, err)
	}
	type candidate struct {
		v   *semver.Version
		tag string
	}
	var matches []candidate
	for name := range refs {
		if !name.IsTag() {
			continue
		}
		tag := name.Short()
		if v, err := semver.NewVersion(tag); err == nil && constraint.Check(v) {
			matches = append(matches, candidate{v, tag})
		}
	}
	if len(matches) == 0 {
		return Revision{}, fmt.Errorf("%w: no tag matches the semver range '%s'", ErrRefNotFound, rng)
	}
	sort.Slice(matches, func(i, j int) bool {
		if c := matches[i].v.Compare(matches[j].v); c != 0 {
			return c > 0
		}
		return matches[i].tag < matches[j].tag
	})
	best := matches[0].tag
	return lookup(refs, best, plumbing.NewTagReferenceName(best), "tag")
}
