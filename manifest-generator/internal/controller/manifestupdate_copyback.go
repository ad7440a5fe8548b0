package controller

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// copiedFile is a file the updaters changed, copied from the session into the clone.
type copiedFile struct {
	path     string // slash-separated, relative to the repository root
	previous []byte // the content before the change
	data     []byte
	mode     fs.FileMode
}

// copyBack copies what the updaters changed in the session's copy of the clone into the clone,
// after checking that every change is an edit of an existing regular file inside the target
// path: an updater that adds, removes or links files, or writes outside the target path (a
// .git/config, another directory's manifests), gets nothing pushed.
func (r *ManifestUpdateReconciler) copyBack(ctx context.Context, session *runner.Session, dir string, t updateTarget) ([]copiedFile, error) {
	changes, err := session.Changes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading what the updaters changed: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	var problems []string
	var copied []copiedFile
	for _, c := range changes {
		name := filepath.FromSlash(c.Path)
		switch {
		case !insideTarget(t.path, c.Path):
			problems = append(problems, fmt.Sprintf("%s was %s, outside the target path '%s'", c.Path, c.Kind, t.path))
			continue
		case c.Kind != runner.Modified:
			problems = append(problems, fmt.Sprintf("%s was %s: updaters may only edit existing files", c.Path, c.Kind))
			continue
		case !c.Regular:
			problems = append(problems, fmt.Sprintf("%s is no longer a regular file", c.Path))
			continue
		}
		fi, err := root.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			problems = append(problems, fmt.Sprintf("%s is not a regular file of the repository", c.Path))
			continue
		}
		previous, err := root.ReadFile(name)
		if err != nil {
			return nil, err
		}
		copied = append(copied, copiedFile{path: c.Path, previous: previous, data: c.Data, mode: fi.Mode().Perm()})
	}
	if len(problems) > 0 {
		return nil, verificationFailed("the updaters changed files outside the change, nothing was pushed: %s", strings.Join(problems, "; "))
	}
	for _, f := range copied {
		if err := root.WriteFile(filepath.FromSlash(f.path), f.data, f.mode); err != nil {
			return nil, fmt.Errorf("copying %s into the clone: %w", f.path, err)
		}
	}
	return copied, nil
}

// insideTarget reports whether the slash path p is inside the target path (clean, relative).
func insideTarget(target, p string) bool {
	if p == ".git" || strings.HasPrefix(p, ".git/") {
		return false
	}
	target = filepath.ToSlash(target)
	return target == "." || p == target || strings.HasPrefix(p, target+"/")
}

// checkEachFileCounts makes sure that, when the updaters changed several files, each of them
// takes part in the change: with that file alone put back, the manifests must differ from those
// after the change. A file that changes nothing in the manifests would otherwise be committed
// under the bot's name without anybody asking for it. One changed file needs no check: the
// verification already showed that it makes the change.
func (r *ManifestUpdateReconciler) checkEachFileCounts(ctx context.Context, dir string, t updateTarget, mode updateMode,
	copied []copiedFile, after []*unstructured.Unstructured) error {
	if len(copied) < 2 {
		return nil
	}
	var idle []string
	for _, f := range copied {
		if err := mode.session.WriteFile(ctx, f.path, f.previous, f.mode); err != nil {
			return err
		}
		without, err := r.manifests(ctx, dir, t, mode)
		if err != nil {
			return verificationFailed("the manifests of path '%s' cannot be generated without the change of %s: %s", t.path, f.path, err.Error())
		}
		if reflect.DeepEqual(objectMap(without.objects), objectMap(after)) {
			idle = append(idle, f.path)
		}
		if err := mode.session.WriteFile(ctx, f.path, f.data, f.mode); err != nil {
			return err
		}
	}
	if len(idle) > 0 {
		return verificationFailed("the updaters changed files that take no part in the change, nothing was pushed: %s", strings.Join(idle, ", "))
	}
	return nil
}

func objectMap(objs []*unstructured.Unstructured) map[string]map[string]any {
	m := make(map[string]map[string]any, len(objs))
	for _, o := range objs {
		m[describe(o)+"|"+o.GetAPIVersion()] = o.Object
	}
	return m
}
