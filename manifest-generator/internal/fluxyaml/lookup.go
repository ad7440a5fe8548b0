package fluxyaml

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Find looks for .flux.yaml in targetPath and then in each parent up to
// root, the extracted artifact, as Flux v1 did; the nearest file wins and
// directories below targetPath are never searched. targetPath is relative
// to root (a leading "/" is read as the root, like Flux's spec.path) and
// must not leave it. configPath is returned relative to root.
//
// All file access goes through os.Root, so a symlink (the target itself,
// or a .flux.yaml) that points out of the artifact is an error rather than
// a way to read the controller's own files.
func Find(root, targetPath string) (configPath string, found bool, err error) {
	rel, err := cleanTarget(targetPath)
	if err != nil {
		return "", false, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", false, fmt.Errorf("opening artifact root: %w", err)
	}
	defer r.Close()

	if err := checkTargetDir(r, rel, targetPath); err != nil {
		return "", false, err
	}
	for dir := rel; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, FileName)
		fi, err := r.Stat(candidate)
		switch {
		case err == nil:
			if !fi.Mode().IsRegular() {
				return "", false, fmt.Errorf("%s is not a regular file", candidate)
			}
			return candidate, true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", false, fmt.Errorf("looking for %s: %w", candidate, err)
		}
		if dir == "." {
			return "", false, nil
		}
	}
}

// TargetDir returns the absolute, symlink-free directory of targetPath
// inside root: the working directory for generators and updaters.
func TargetDir(root, targetPath string) (string, error) {
	rel, err := cleanTarget(targetPath)
	if err != nil {
		return "", err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", fmt.Errorf("opening artifact root: %w", err)
	}
	defer r.Close()
	if err := checkTargetDir(r, rel, targetPath); err != nil {
		return "", err
	}

	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(realRoot, rel))
	if err != nil {
		return "", err
	}
	// os.Root already refused escaping links; this re-checks the resolved
	// path so commands never start outside the artifact.
	if inner, err := filepath.Rel(realRoot, dir); err != nil || !(inner == "." || filepath.IsLocal(inner)) {
		return "", fmt.Errorf("path %q resolves outside the artifact root", targetPath)
	}
	return dir, nil
}

// cleanTarget turns a user-given path into a clean path relative to the
// root, refusing any that climbs out of it.
func cleanTarget(targetPath string) (string, error) {
	p := filepath.Clean(strings.TrimLeft(targetPath, "/"))
	if p != "." && !filepath.IsLocal(p) {
		return "", fmt.Errorf("path %q is outside the artifact root", targetPath)
	}
	return p, nil
}

func checkTargetDir(r *os.Root, rel, targetPath string) error {
	fi, err := r.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("path %q not found in the artifact", targetPath)
	case err != nil:
		return fmt.Errorf("path %q: %w", targetPath, err)
	case !fi.IsDir():
		return fmt.Errorf("path %q is not a directory", targetPath)
	}
	return nil
}

// ReadFile reads the file name (relative to root) through an os.Root, so a symlink in an
// artifact or a clone cannot make the controller read a file outside it.
func ReadFile(root, name string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(name)
}
