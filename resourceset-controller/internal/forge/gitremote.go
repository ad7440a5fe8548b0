package forge

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/gitauth"
)

// peeledSuffix ends the name of a peeled ref: the commit an annotated tag points at.
const peeledSuffix = "^{}"

// gitRemote lists the branches or tags of any Git server by ls-remote (the refs the server
// advertises), with a GitRepository's credentials: one request, no clone.
type gitRemote struct {
	url  string
	auth *gitauth.Auth
}

// NewGitRemote is the Lister of the GitBranch and GitTag types. auth may be nil (anonymous).
func NewGitRemote(url string, auth *gitauth.Auth) Lister {
	return &gitRemote{url: url, auth: auth}
}

func (g *gitRemote) List(ctx context.Context, kind Kind) ([]Item, error) {
	prefix := map[Kind]string{Branches: "refs/heads/", Tags: "refs/tags/"}[kind]
	if prefix == "" {
		return nil, fmt.Errorf("a Git server has no %s", kind)
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{g.url}})
	opts := &git.ListOptions{PeelingOption: git.AppendPeeled}
	if g.auth != nil {
		opts.Auth, opts.CABundle = g.auth.Method, g.auth.CABundle
	}
	refs, err := remote.ListContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the refs of %s: %w", g.url, err)
	}
	pages := Pages{What: kind.String() + " of " + g.url}
	shas := map[string]string{}
	peeled := map[string]string{}
	var names []string
	for _, ref := range refs {
		name := ref.Name().String()
		if ref.Type() != plumbing.HashReference || !strings.HasPrefix(name, prefix) {
			continue
		}
		short := strings.TrimPrefix(name, prefix)
		if base, ok := strings.CutSuffix(short, peeledSuffix); ok {
			peeled[base] = ref.Hash().String()
			continue
		}
		if err := pages.Add(1); err != nil {
			return nil, err
		}
		names = append(names, short)
		shas[short] = ref.Hash().String()
	}
	out := make([]Item, 0, len(names))
	for _, n := range names {
		sha := shas[n]
		if p, ok := peeled[n]; ok {
			// An annotated tag: its input names the commit, as the forges' APIs do.
			sha = p
		}
		it := Item{ID: inputs.ID(n), SHA: sha}
		if kind == Branches {
			it.Branch = n
		} else {
			it.Tag = n
		}
		out = append(out, it)
	}
	return out, nil
}
