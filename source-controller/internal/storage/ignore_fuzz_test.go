package storage

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzIgnoreFilter parses fuzzed .sourceignore files (at the top and in a subdirectory) and a
// fuzzed spec.ignore over a fixed tree, and checks the two rules no pattern can override:
// nothing under a .git directory or file is archived, and .flux.yaml files and the directories
// leading to them always are. A fuzzed path is also matched, as a file and as a directory.
func FuzzIgnoreFilter(f *testing.F) {
	dir := f.TempDir()
	for _, p := range []string{
		".git/config", ".git/HEAD", "sub/.git", "sub/x/.git/config", ".flux.yaml", "app.yaml", "logo.png",
		"apps/.flux.yaml", "apps/x.yaml", "apps/deep/.flux.yaml", "docs/readme.md", "docs/deep/more.md",
		".github/.flux.yaml", ".github/ci.yml", "a/b/c.txt", "a b/c d.yaml",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		setUp(f, os.MkdirAll(filepath.Dir(full), 0o755))
		setUp(f, os.WriteFile(full, nil, 0o644))
	}
	for _, s := range []struct{ top, nested, spec, probe string }{
		{"*.yaml\n!keep.yaml\n", "!child.yaml\n", "", "keep.yaml"},
		{"!.git/\n!.git\n!**/.git/**\n", "", "!.git/\n!/.git/config\n", ".git/config"},
		{"*.yaml\n.flux.yaml\n", "*\n", "/docs/\n**/.flux.yaml\n", "apps/.flux.yaml"},
		{"# comment\n\nsecret.yaml\n/local.yaml\n", "/x.yaml\n", "# docs\n/docs/\n!README.md\r\n!logo.png\n", "docs/a"},
		{"docs/\n/build\n", "deep/\n", "*\n!*/\n", "x/build/out"},
		{"\\!x\n\\#y\n[a-z]*.txt\n**/b/**\n", "a/**/c\n", "!**\n", "a/b/c.txt"},
		{"[\n\\\n**\n***\n/**/\n!\n", "\x00\n", "!/\n/\n", ""},
	} {
		f.Add(s.top, s.nested, s.spec, true, s.probe)
	}
	f.Fuzz(func(t *testing.T, top, nested, spec string, useSpec bool, probe string) {
		if len(top)+len(nested)+len(spec)+len(probe) > 4096 {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, ".sourceignore"), []byte(top), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "apps", ".sourceignore"), []byte(nested), 0o644); err != nil {
			t.Fatal(err)
		}
		var specIgnore *string
		if useSpec {
			specIgnore = &spec
		}
		filter, err := IgnoreFilter(dir, specIgnore)
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			excluded := filter(rel, d)
			switch {
			case slices.Contains(strings.Split(rel, "/"), ".git"):
				if !excluded {
					t.Errorf("%s is archived", rel)
				}
			case path.Base(rel) == fluxYAML || d.IsDir() && leadsToFluxYAML(rel):
				if excluded {
					t.Errorf("%s is excluded", rel)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if probe == "" {
			return
		}
		for _, isDir := range []bool{false, true} {
			excluded := filter(probe, probeEntry{path.Base(probe), isDir})
			if slices.Contains(strings.Split(probe, "/"), ".git") && !excluded {
				t.Errorf("%s (directory: %t) is archived", probe, isDir)
			}
		}
	})
}

// leadsToFluxYAML tells the directories of FuzzIgnoreFilter's tree that hold a .flux.yaml.
func leadsToFluxYAML(dir string) bool {
	return dir == "apps" || dir == "apps/deep" || dir == ".github"
}

// probeEntry is the fs.DirEntry of a path that need not exist.
type probeEntry struct {
	name  string
	isDir bool
}

func (e probeEntry) Name() string { return e.name }
func (e probeEntry) IsDir() bool  { return e.isDir }
func (e probeEntry) Type() fs.FileMode {
	if e.isDir {
		return fs.ModeDir
	}
	return 0
}
func (e probeEntry) Info() (fs.FileInfo, error) { return nil, fs.ErrNotExist }
