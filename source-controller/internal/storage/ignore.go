package storage

import (
	"io/fs"
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

// IgnoreFilter returns the filter for Archive of dir. Patterns, in gitignore syntax, apply in this
// order, a later match overriding an earlier one (so `!` can re-include): the defaults, every
// .sourceignore file in dir and its subdirectories (scoped to its directory, parents before
// children), then specIgnore (relative to dir) when set. Files named .flux.yaml, and the
// directories leading to them, are never excluded; .git, anywhere, always is.
func IgnoreFilter(dir string, specIgnore *string) (func(p string, d fs.DirEntry) bool, error) {
	var ps []gitignore.Pattern
	for _, p := range strings.Split(defaultIgnore, ",") {
		ps = append(ps, gitignore.ParsePattern(p, nil))
	}
	dir, err := filepath.EvalSymlinks(dir) // the walk does not descend into a symlinked root
	if err != nil {
		return nil, err
	}
	keepDirs := map[string]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && p != dir {
			return filepath.SkipDir // big, and never archived
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch d.Name() {
		case sourceignore.IgnoreFile:
			if !d.Type().IsRegular() {
				return nil
			}
			var domain []string
			if parent := path.Dir(rel); parent != "." {
				domain = strings.Split(parent, "/")
			}
			found, err := sourceignore.ReadIgnoreFile(p, domain)
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
