package controller

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// overlayFS is a tree with other trees mounted at some of its paths (the includes of a
// GitRepository): a mount replaces whatever the base has at its path, and the directories
// leading to a mount exist even where the base has none.
type overlayFS struct {
	base fs.FS
	// mounts are by path, slash-separated and clean, never ".".
	mounts map[string]fs.FS
}

var (
	_ fs.ReadDirFS = overlayFS{}
	_ fs.StatFS    = overlayFS{}
)

// mounted finds the mount that holds name, and name within it.
func (o overlayFS) mounted(name string) (fs.FS, string, bool) {
	for p := name; p != "."; p = path.Dir(p) {
		if m, ok := o.mounts[p]; ok {
			rel := strings.TrimPrefix(strings.TrimPrefix(name, p), "/")
			if rel == "" {
				rel = "."
			}
			return m, rel, true
		}
	}
	return nil, "", false
}

// leadsToMount: name is a directory on the way to a mount.
func (o overlayFS) leadsToMount(name string) bool {
	for p := range o.mounts {
		if name == "." || strings.HasPrefix(p, name+"/") {
			return true
		}
	}
	return false
}

func (o overlayFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if m, rel, ok := o.mounted(name); ok {
		return m.Open(rel)
	}
	f, err := o.base.Open(name)
	if err == nil || !o.leadsToMount(name) {
		return f, err
	}
	return syntheticDir{name: path.Base(name)}, nil
}

func (o overlayFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if m, rel, ok := o.mounted(name); ok {
		return fs.Stat(m, rel)
	}
	fi, err := fs.Stat(o.base, name)
	if o.leadsToMount(name) && (err != nil || !fi.IsDir()) {
		return syntheticDir{name: path.Base(name)}, nil
	}
	return fi, err
}

// ReadDir lists name: the mount's entries inside a mount; else the base's, where the entries
// that are (or lead to) a mount become directories.
func (o overlayFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	if m, rel, ok := o.mounted(name); ok {
		return fs.ReadDir(m, rel)
	}
	list, err := fs.ReadDir(o.base, name)
	if err != nil {
		if !o.leadsToMount(name) {
			return nil, err
		}
		list = nil
	}
	children := map[string]bool{}
	for p := range o.mounts {
		if rest, ok := strings.CutPrefix(p, name+"/"); ok || name == "." {
			if name == "." {
				rest = p
			}
			child, _, _ := strings.Cut(rest, "/")
			children[child] = true
		}
	}
	out := make([]fs.DirEntry, 0, len(list)+len(children))
	for _, e := range list {
		if !children[e.Name()] {
			out = append(out, e)
		}
	}
	for child := range children {
		out = append(out, fs.FileInfoToDirEntry(syntheticDir{name: child}))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// syntheticDir is a directory made to lead to a mount; it is listed through ReadDir.
type syntheticDir struct{ name string }

func (d syntheticDir) Name() string               { return d.name }
func (d syntheticDir) Size() int64                { return 0 }
func (d syntheticDir) Mode() fs.FileMode          { return fs.ModeDir | 0o755 }
func (d syntheticDir) ModTime() time.Time         { return time.Time{} }
func (d syntheticDir) IsDir() bool                { return true }
func (d syntheticDir) Sys() any                   { return nil }
func (d syntheticDir) Stat() (fs.FileInfo, error) { return d, nil }
func (d syntheticDir) Close() error               { return nil }
func (d syntheticDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
