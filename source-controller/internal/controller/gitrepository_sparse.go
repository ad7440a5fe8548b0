package controller

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// sparseDirs are the directories of spec.sparseCheckout as tree paths: a leading "./" and a
// trailing "/" are dropped, as Flux does.
func sparseDirs(list []string) []string {
	dirs := make([]string, 0, len(list))
	for _, d := range list {
		d = strings.TrimSuffix(strings.TrimPrefix(d, "./"), "/")
		if d == "" || d == "." {
			d = "."
		} else {
			d = path.Clean(d)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// checkSparse fails when a directory of spec.sparseCheckout is not in the tree: a typo would
// otherwise give an artifact without the content it was meant to hold.
func checkSparse(files fs.FS, dirs []string) error {
	for _, d := range dirs {
		if !fs.ValidPath(d) {
			return fmt.Errorf("sparse checkout directory '%s' is not a path inside the repository", d)
		}
		if _, err := fs.Stat(files, d); err != nil {
			return fmt.Errorf("sparse checkout directory '%s' does not exist in the repository", d)
		}
	}
	return nil
}

// sparseKeeps tells whether the tree path p belongs to a sparse checkout of dirs: it is in one
// of them, or a directory leading to one. Nil dirs keep everything.
func sparseKeeps(dirs []string, p string) bool {
	if dirs == nil {
		return true
	}
	for _, d := range dirs {
		if d == "." || p == d || strings.HasPrefix(p, d+"/") || strings.HasPrefix(d, p+"/") {
			return true
		}
	}
	return false
}
