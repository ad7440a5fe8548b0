package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// maxSubmoduleDepth bounds the nesting of submodules: a repository that is (through others) its
// own submodule would otherwise be fetched forever.
const maxSubmoduleDepth = 8

// fetchSubmodules fetches, into the clone's object storage st, the repositories of the
// submodules of commit c (from .gitmodules, relative URLs against remote's), with the same
// credentials and proxy, and then theirs, recursively. The tree then reads the commits they pin
// from the same storage, so no working tree is written; the budget counts their objects as it
// counts the clone's. A pinned commit that no branch of the submodule's repository holds is an
// error, as for `git submodule update`.
func fetchSubmodules(ctx context.Context, st storage.Storer, b *budget, c *object.Commit, remote Remote, n *int, depth int) error {
	tree, err := c.Tree()
	if err != nil {
		return err
	}
	pinned, err := submoduleEntries(tree)
	if err != nil || len(pinned) == 0 {
		return err
	}
	if depth >= maxSubmoduleDepth {
		return fmt.Errorf("submodules nest deeper than %d levels", maxSubmoduleDepth)
	}
	modules, err := readModules(tree)
	if err != nil {
		return err
	}
	for _, p := range pinned {
		sm, ok := modules[p.path]
		if !ok {
			return fmt.Errorf("submodule '%s' is not in .gitmodules", p.path)
		}
		u, err := submoduleURL(remote.URL, sm.URL)
		if err != nil {
			return fmt.Errorf("submodule '%s': %w", p.path, err)
		}
		sub := remote.WithURL(u)
		*n++
		if err := fetchAll(ctx, st, sub, *n); err != nil {
			if b.exceeded.Load() {
				return tooLarge(b.limit, b.limit, true)
			}
			return fmt.Errorf("fetching submodule '%s' from '%s': %w", p.path, u, err)
		}
		sc, err := object.GetCommit(st, p.hash)
		if err != nil {
			return fmt.Errorf("%w: submodule '%s' pins commit '%s', which no branch of '%s' holds", ErrRefNotFound, p.path, p.hash, u)
		}
		if err := fetchSubmodules(ctx, st, b, sc, sub, n, depth+1); err != nil {
			return err
		}
	}
	return nil
}

type pinnedCommit struct {
	path string
	hash plumbing.Hash
}

// submoduleEntries lists the submodule entries (gitlinks) of the tree with the commits they pin.
func submoduleEntries(tree *object.Tree) ([]pinnedCommit, error) {
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	var out []pinnedCommit
	for {
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if e.Mode == filemode.Submodule {
			out = append(out, pinnedCommit{path: name, hash: e.Hash})
		}
	}
}

// readModules reads .gitmodules, by submodule path.
func readModules(tree *object.Tree) (map[string]*config.Submodule, error) {
	f, err := tree.File(".gitmodules")
	if err != nil {
		return nil, fmt.Errorf("the tree has submodules but no readable .gitmodules: %w", err)
	}
	content, err := f.Contents()
	if err != nil {
		return nil, err
	}
	m := config.NewModules()
	if err := m.Unmarshal([]byte(content)); err != nil {
		return nil, fmt.Errorf(".gitmodules does not parse: %w", err)
	}
	byPath := map[string]*config.Submodule{}
	for _, sm := range m.Submodules {
		byPath[path.Clean(sm.Path)] = sm
	}
	return byPath, nil
}

// submoduleURL is the URL of a submodule: relative ones ("../lib.git") against the URL of the
// repository that holds them, as Git resolves them; absolute ones must have the same scheme,
// for the credentials to apply.
func submoduleURL(parent, raw string) (string, error) {
	p, err := url.Parse(parent)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(raw, "./") || strings.HasPrefix(raw, "../") {
		p.Path = path.Clean(strings.TrimSuffix(p.Path, "/") + "/" + raw)
		return p.String(), nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("URL '%s' is neither relative nor an http, https or ssh URL", raw)
	}
	if u.Scheme != p.Scheme {
		return "", fmt.Errorf("URL '%s' is not %s as the repository's: its credentials would not apply", raw, p.Scheme)
	}
	return u.String(), nil
}

// fetchAll fetches every branch of the remote into st, under a namespace of its own.
func fetchAll(ctx context.Context, st storage.Storer, remote Remote, n int) error {
	name := "submodule-" + strconv.Itoa(n)
	r := gogit.NewRemote(st, &config.RemoteConfig{Name: name, URLs: []string{remote.URL}})
	err := r.FetchContext(ctx, &gogit.FetchOptions{
		RemoteName:   name,
		RefSpecs:     []config.RefSpec{config.RefSpec("+refs/heads/*:refs/submodules/" + strconv.Itoa(n) + "/*")},
		Auth:         remote.Auth.Method,
		CABundle:     remote.Auth.CABundle,
		ProxyOptions: remote.Proxy,
		Tags:         gogit.NoTags,
	})
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}
