package gitwrite

import (
	"fmt"
	"sort"

	gogit "github.com/go-git/go-git/v5"
)

// Changed lists the paths (slash-separated, relative to the work tree, sorted) that differ from
// the checked-out commit in the work tree at dir: modified, added, deleted and untracked files,
// both names of a rename. Files the repository's .gitignore excludes are not listed. Callers
// use it inside Push's change function to verify that only the intended files changed.
func Changed(dir string) ([]string, error) {
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the work tree: %w", err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	status, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("reading the work tree's status: %w", err)
	}
	seen := map[string]bool{}
	for path, s := range status {
		if s.Staging == gogit.Unmodified && s.Worktree == gogit.Unmodified {
			continue
		}
		seen[path] = true
		if s.Extra != "" {
			seen[s.Extra] = true
		}
	}
	paths := make([]string, 0, len(seen))
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, nil
}
