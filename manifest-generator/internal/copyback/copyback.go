// Package copyback decides which of the files that an update's commands changed, in the runner's
// copy of a clone, may go back into the clone to be committed: edits of existing regular files
// inside the target path, nothing else. The list of changes comes from the runner, so every path
// is checked again here: clean, relative, inside the target, not under .git, and read and
// written through an os.Root of the clone.
package copyback

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// File is a changed file accepted for the clone.
type File struct {
	// Path is slash-separated, relative to the repository root.
	Path string
	// Previous is the content before the change, Data after it; Mode is the clone's file mode.
	Previous, Data []byte
	Mode           fs.FileMode
}

// RefusedError lists the changes that may not go back: nothing of the update may be pushed.
type RefusedError struct {
	Problems []string
}

func (e *RefusedError) Error() string { return strings.Join(e.Problems, "; ") }

// Check returns the files of changes to copy into the clone at root, or a *RefusedError when a
// change is anything but an edit of an existing regular file inside target (a clean, relative
// slash path; "." for the whole repository).
func Check(root *os.Root, target string, changes []runner.Change) ([]File, error) {
	var problems []string
	var files []File
	for _, c := range changes {
		switch {
		case !InsideTarget(target, c.Path):
			problems = append(problems, fmt.Sprintf("%s was %s, outside the target path '%s'", c.Path, c.Kind, target))
			continue
		case c.Kind != runner.Modified:
			problems = append(problems, fmt.Sprintf("%s was %s: updaters may only edit existing files", c.Path, c.Kind))
			continue
		case !c.Regular:
			problems = append(problems, fmt.Sprintf("%s is no longer a regular file", c.Path))
			continue
		}
		name := filepath.FromSlash(c.Path)
		fi, err := root.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			problems = append(problems, fmt.Sprintf("%s is not a regular file of the repository", c.Path))
			continue
		}
		previous, err := root.ReadFile(name)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: c.Path, Previous: previous, Data: c.Data, Mode: fi.Mode().Perm()})
	}
	if len(problems) > 0 {
		return nil, &RefusedError{Problems: problems}
	}
	return files, nil
}

// Write writes files into the clone at root.
func Write(root *os.Root, files []File) error {
	for _, f := range files {
		if err := root.WriteFile(filepath.FromSlash(f.Path), f.Data, f.Mode); err != nil {
			return fmt.Errorf("copying %s into the clone: %w", f.Path, err)
		}
	}
	return nil
}

// InsideTarget reports whether the slash path p is a clean path inside the target path and
// outside .git: "staging/../production/app.yaml" is not inside "staging", though os.Root would
// resolve it without leaving the clone.
func InsideTarget(target, p string) bool {
	if !fs.ValidPath(p) || p == "." || p == ".git" || strings.HasPrefix(p, ".git/") {
		return false
	}
	target = filepath.ToSlash(target)
	return target == "." || p == target || strings.HasPrefix(p, target+"/")
}
