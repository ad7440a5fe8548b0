package fluxyaml

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Object is a Kubernetes object read from a raw YAML file. It remembers
// where it came from because raw-mode updates edit that file in place.
type Object struct {
	Object *unstructured.Unstructured
	// File is the file's path relative to the artifact root.
	File string
	// Index is the YAML document within the file, counted from 0.
	Index int
	// Item is the position in the items of a List document, -1 otherwise.
	Item int
}

// ReadRaw returns the Kubernetes objects in the YAML and JSON files under
// targetPath; see ReadRawObjects. Their nodes count against
// limits.MaxOutputNodes (a *LimitError when they are more).
func ReadRaw(root, targetPath string, limits Limits) ([]*unstructured.Unstructured, error) {
	objs, err := readRawObjects(root, targetPath, limits.nodeBudget("path '"+targetPath+"'"))
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out, nil
}

// ReadRawObjects reads every *.yaml, *.yml and *.json file under
// targetPath, recursively and in lexical order, skipping hidden files and
// directories (.git, .flux.yaml, .github). Documents that are not
// Kubernetes objects are skipped as in Flux v1; Lists are expanded; the
// same object defined twice is an error naming both places.
//
// Files are read through os.Root: a symlinked file pointing out of the
// artifact is an error, and symlinked directories are not followed. A
// document over MaxDocumentSize or MaxDocumentNodes is an error, even in a
// file that holds no Kubernetes object: it is refused before it is read.
// The objects' nodes count against limits.MaxOutputNodes.
func ReadRawObjects(root, targetPath string, limits Limits) ([]Object, error) {
	return readRawObjects(root, targetPath, limits.nodeBudget("path '"+targetPath+"'"))
}

// readRawObjects is ReadRawObjects counting the nodes of the objects in
// budget (nil: none). It reads best whole: one walk of the target path, each file
// bounded and decoded where it is found.
func readRawObjects(root, targetPath string, budget *nodeBudget) ([]Object, error) {
	rel, err := cleanTarget(targetPath)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening artifact root: %w", err)
	}
	defer r.Close()
	if err := checkTargetDir(r, rel, targetPath); err != nil {
		return nil, err
	}

	fsys := r.FS()
	start := filepath.ToSlash(rel)
	var out []Object
	seen := map[string]Object{}
	err = fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hidden := p != start && strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden {
				return fs.SkipDir
			}
			return nil
		}
		if hidden || !isManifestFile(d.Name()) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := fs.Stat(fsys, p)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if !fi.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		file := filepath.FromSlash(p)
		found, err := decodeObjects(data, true, budget)
		if err != nil {
			var de *docError
			switch {
			case !errors.As(err, &de):
				return err // *LimitError
			case de.tooLarge:
				return &ManifestError{Msg: fmt.Sprintf("file %s holds a document too large to decode: %v; split it, or move the file out of the path when it holds no Kubernetes objects", file, err)}
			}
			return &ManifestError{Msg: fmt.Sprintf("file %s is not valid: %v", file, err)}
		}
		for _, f := range found {
			o := Object{Object: f.obj, File: file, Index: f.index, Item: f.item}
			key := objectKey(f.obj)
			if prev, dup := seen[key]; dup {
				return &ManifestError{Msg: fmt.Sprintf("duplicate object %s: in %s (%s) and in %s (%s)",
					objectName(f.obj), prev.File, docPosition(prev.Index, prev.Item), file, docPosition(f.index, f.item))}
			}
			seen[key] = o
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		var me *ManifestError
		if errors.As(err, &me) {
			return nil, me
		}
		var le *LimitError
		if errors.As(err, &le) {
			return nil, le
		}
		return nil, fmt.Errorf("reading manifests under %q: %w", targetPath, err)
	}
	return out, nil
}

func isManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
