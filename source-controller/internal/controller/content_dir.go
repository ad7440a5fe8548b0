package controller

import (
	"os"
	"path/filepath"
)

// contentDir makes a temporary directory to assemble an artifact's content in: dir is its
// "content" subdirectory (the archive's root, with nothing else beside it); remove deletes it all.
func contentDir(pattern string) (dir string, remove func(), err error) {
	tmp, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", func() {}, err
	}
	dir = filepath.Join(tmp, "content")
	if err := os.Mkdir(dir, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", func() {}, err
	}
	return dir, func() { os.RemoveAll(tmp) }, nil
}
