package git

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeFS is the tree of a commit read from the Git objects, as an fs.FS: the artifact is
// archived from it without writing a working tree. Its entries are what a checkout writes:
// files (mode 0644, 0755 when executable), symlinks (never followed), directories, and for a
// submodule an empty directory, or the tree of the commit it pins when submodules is set. Entry names pass go-git's check of tree paths (no .git, "..",
// separators or control characters), as a checkout's do. Not safe for concurrent use.
type treeFS struct {
	s    storer.EncodedObjectStorer
	root plumbing.Hash
	// entries are the listed directories' entries by path: fs.WalkDir lists a directory
	// before it opens its files.
	entries map[string]object.TreeEntry
	// dirs are the listed directories: the tree is walked for its size, its ignore rules and
	// its archive.
	dirs map[string][]fs.DirEntry
	// submodules: the commits the submodules pin were fetched into s; their trees are grafted
	// at the submodules' paths.
	submodules bool
}

func newTreeFS(s storer.EncodedObjectStorer, root plumbing.Hash) *treeFS {
	return &treeFS{s: s, root: root, entries: map[string]object.TreeEntry{}, dirs: map[string][]fs.DirEntry{}}
}

// size is the size of the files of the tree, symlinks included, what a checkout writes; object
// headers give it without reading the content.
func (t *treeFS) size() (int64, error) {
	var size int64
	err := fs.WalkDir(t, ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n, err := t.s.EncodedObjectSize(d.(dirEntry).e.Hash)
		size += n
		return err
	})
	return size, err
}

var (
	_ fs.ReadDirFS = (*treeFS)(nil)
	_ fs.StatFS    = (*treeFS)(nil)
)

// ReadDir lists the directory name, sorted by name as fs.ReadDirFS requires.
func (t *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if list, ok := t.dirs[name]; ok {
		return list, nil
	}
	hash := t.root
	if name != "." {
		e, err := t.lookup("readdir", name)
		if err != nil {
			return nil, err
		}
		switch e.Mode {
		case filemode.Submodule:
			if !t.submodules {
				return nil, nil // its commit is not fetched: an empty directory, as a checkout leaves it
			}
			c, err := object.GetCommit(t.s, e.Hash)
			if err != nil {
				return nil, &fs.PathError{Op: "readdir", Path: name, Err: fmt.Errorf("submodule commit '%s': %w", e.Hash, err)}
			}
			hash = c.TreeHash
		case filemode.Dir:
			hash = e.Hash
		default:
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
		}
	}
	tree, err := object.GetTree(t.s, hash)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	list := make([]fs.DirEntry, 0, len(tree.Entries))
	for _, e := range tree.Entries {
		// FindEntry applies go-git's validation of tree paths, what its checkout would refuse.
		if _, err := tree.FindEntry(e.Name); err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: fmt.Errorf("entry %q: %w", e.Name, err)}
		}
		if _, err := e.Mode.ToOSFileMode(); err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: fmt.Errorf("entry %q: %w", e.Name, err)}
		}
		p := e.Name
		if name != "." {
			p = name + "/" + e.Name
		}
		t.entries[p] = e
		list = append(list, dirEntry{t: t, path: p, e: e})
	}
	// Git orders a directory as if its name ended in "/"; fs.WalkDir, and the archive of a
	// directory on disk, by name.
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	t.dirs[name] = list
	return list, nil
}

// Open opens a file or a directory; a symlink is not followed.
func (t *treeFS) Open(name string) (fs.File, error) {
	if name == "." {
		return dirFile{info: rootInfo{}}, nil
	}
	e, err := t.lookup("open", name)
	if err != nil {
		return nil, err
	}
	info := fileInfo{t: t, e: e}
	switch e.Mode {
	case filemode.Dir, filemode.Submodule:
		return dirFile{info: info}, nil
	case filemode.Symlink:
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("symlinks are not followed")}
	}
	blob, err := object.GetBlob(t.s, e.Hash)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	info.size = blob.Size
	return &blobFile{ReadCloser: r, info: info}, nil
}

// Stat describes name without following a symlink.
func (t *treeFS) Stat(name string) (fs.FileInfo, error) {
	if name == "." {
		return rootInfo{}, nil
	}
	e, err := t.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return fileInfo{t: t, e: e, size: -1}, nil
}

// lookup finds the entry at name, listing its parent directories when the walk has not yet.
func (t *treeFS) lookup(op, name string) (object.TreeEntry, error) {
	if !fs.ValidPath(name) || name == "." {
		return object.TreeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if e, ok := t.entries[name]; ok {
		return e, nil
	}
	if _, err := t.ReadDir(path.Dir(name)); err != nil {
		return object.TreeEntry{}, err
	}
	if e, ok := t.entries[name]; ok {
		return e, nil
	}
	return object.TreeEntry{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

type dirEntry struct {
	t    *treeFS
	path string
	e    object.TreeEntry
}

func (d dirEntry) Name() string               { return d.e.Name }
func (d dirEntry) IsDir() bool                { return d.Type().IsDir() }
func (d dirEntry) Type() fs.FileMode          { return osMode(d.e.Mode).Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.t.Stat(d.path) }

// fileInfo describes an entry; the size of a file is read from its object's header when
// asked (size -1), or known from its opened blob.
type fileInfo struct {
	t    *treeFS
	e    object.TreeEntry
	size int64
}

func (i fileInfo) Name() string       { return i.e.Name }
func (i fileInfo) Mode() fs.FileMode  { return osMode(i.e.Mode) }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i fileInfo) Sys() any           { return nil }

func (i fileInfo) Size() int64 {
	if i.size >= 0 || !i.Mode().IsRegular() {
		return max(i.size, 0)
	}
	n, err := i.t.s.EncodedObjectSize(i.e.Hash)
	if err != nil {
		return 0
	}
	return n
}

// osMode is the mode a checkout gives an entry; ReadDir refused the modes go-git cannot check
// out.
func osMode(m filemode.FileMode) fs.FileMode {
	switch m {
	case filemode.Dir, filemode.Submodule:
		return fs.ModeDir | 0o755
	case filemode.Executable:
		return 0o755
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	default:
		return 0o644
	}
}

type rootInfo struct{}

func (rootInfo) Name() string       { return "." }
func (rootInfo) Size() int64        { return 0 }
func (rootInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (rootInfo) ModTime() time.Time { return time.Time{} }
func (rootInfo) IsDir() bool        { return true }
func (rootInfo) Sys() any           { return nil }

type blobFile struct {
	io.ReadCloser
	info fileInfo
}

func (f *blobFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// dirFile is an opened directory; it is listed through treeFS.ReadDir.
type dirFile struct{ info fs.FileInfo }

func (d dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d dirFile) Close() error               { return nil }

func (d dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
