package storage

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/sourceignore/gitignore"
)

// fluxYAML is never excluded: the manifest generator reads it from the artifact.
const fluxYAML = ".flux.yaml"

// defaultIgnore are Flux's default exclusions: VCS metadata, CI configuration and binary or
// archive files. Flux's ExcludeExtra (.goreleaser.yml, .sops.yaml, .flux.yaml) is left out, as
// .flux.yaml must reach the artifact.
var defaultIgnore = strings.Join([]string{sourceignore.ExcludeVCS, sourceignore.ExcludeCI, sourceignore.ExcludeExt}, ",")

// IgnoreFilter returns the filter for Archive of dir: IgnoreFilterFS of dir.
func IgnoreFilter(dir string, specIgnore *string) (func(p string, d fs.DirEntry) bool, error) {
	dir, err := filepath.EvalSymlinks(dir) // the walk does not descend into a symlinked root
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return IgnoreFilterFS(root.FS(), specIgnore)
}

// IgnoreFilterFS returns the filter for ArchiveFS of fsys. Patterns, in gitignore syntax, apply
// in this order, a later match overriding an earlier one (so `!` can re-include): the defaults,
// every .sourceignore file in fsys (scoped to its directory, in the order of the walk: parents
// before children), then specIgnore (relative to the root) when set. Files named .flux.yaml, and
// the directories leading to them, are never excluded; .git, anywhere, always is.
func IgnoreFilterFS(fsys fs.FS, specIgnore *string) (func(p string, d fs.DirEntry) bool, error) {
	var ps []gitignore.Pattern
	for _, p := range strings.Split(defaultIgnore, ",") {
		ps = append(ps, gitignore.ParsePattern(p, nil))
	}
	keepDirs := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && rel != "." {
			return fs.SkipDir // big, and never archived
		}
		if d.IsDir() {
			return nil
		}
		switch d.Name() {
		case sourceignore.IgnoreFile:
			if !d.Type().IsRegular() {
				return nil
			}
			var domain []string
			if parent := path.Dir(rel); parent != "." {
				domain = strings.Split(parent, "/")
			}
			found, err := readIgnoreFile(fsys, rel, domain)
			if err != nil {
				return err
			}
			ps = append(ps, found...)
		case fluxYAML:
			for parent := path.Dir(rel); parent != "."; parent = path.Dir(parent) {
				keepDirs[parent] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if specIgnore != nil {
		ps = append(ps, sourceignore.ReadPatterns(strings.NewReader(*specIgnore), nil)...)
	}
	m := gitignore.NewMatcher(ps)
	return func(p string, d fs.DirEntry) bool {
		isDir := d.IsDir()
		parts := strings.Split(p, "/")
		// A repository's configuration (credentials in remote URLs among it) and history never
		// reach an artifact, whatever a pattern re-includes.
		if slices.Contains(parts, ".git") {
			return true
		}
		if isDir && keepDirs[p] || !isDir && path.Base(p) == fluxYAML {
			return false
		}
		return m.Match(parts, isDir)
	}, nil
}

// readIgnoreFile reads the patterns of the .sourceignore file at rel; one removed since the
// walk listed it has none.
func readIgnoreFile(fsys fs.FS, rel string, domain []string) ([]gitignore.Pattern, error) {
	f, err := fsys.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sourceignore.ReadPatterns(f, domain), nil
}
