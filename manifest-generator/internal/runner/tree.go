package runner

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// maxChangedFileSize bounds the content of a changed file sent back to the controller: updaters
// edit manifests, not blobs.
const maxChangedFileSize = 8 << 20

// writeTree writes the tree at root to w as an uncompressed tar stream: directories, regular
// files and symbolic links, with their permission bits; the .git directory at the root is left
// out, so no command ever sees a clone's configuration or history.
func writeTree(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := walk(root, func(rel, p string, fi fs.FileInfo) error {
		if rel == ".git" {
			return filepath.SkipDir
		}
		var link string
		var err error
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case !fi.Mode().IsRegular() && !fi.IsDir():
			return nil // sockets, devices: no artifact or clone holds them
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("sending the tree: %w", err)
	}
	return tw.Close()
}

// walk calls fn, in lexical order, for every path under root but root itself, with the path
// relative to root, the full path and its Lstat information. fn may return filepath.SkipDir.
func walk(root string, fn func(rel, p string, fi fs.FileInfo) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return fn(rel, p, fi)
	})
}

// entry is what snapshot records of a path.
type entry struct {
	mode fs.FileMode
	sum  [sha256.Size]byte // of the content of a regular file, of the target of a link
}

// snapshot records every path under root.
func snapshot(root string) (map[string]entry, error) {
	out := map[string]entry{}
	err := walk(root, func(rel, p string, fi fs.FileInfo) error {
		e := entry{mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.sum = sha256.Sum256(data)
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.sum = sha256.Sum256([]byte(link))
		}
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	return out, err
}

// ChangeLimitError is a session whose commands changed more than the runner sends back.
type ChangeLimitError struct {
	// What is "files" or "bytes"; Limit the limit passed, Flag the runner flag that sets it.
	What  string
	Limit int64
	Flag  string
}

func (e *ChangeLimitError) Error() string {
	return fmt.Sprintf("the commands changed more than the runner's limit of %d %s (--%s)", e.Limit, e.What, e.Flag)
}

// changes compares the tree at root with an earlier snapshot of it; more changes than l allows
// are a *ChangeLimitError.
func changes(root string, before map[string]entry, l Limits) ([]Change, error) {
	after, err := snapshot(root)
	if err != nil {
		return nil, err
	}
	var out []Change
	var size int64
	for p, a := range after {
		b, existed := before[p]
		kind := Added
		if existed {
			if a == b {
				continue
			}
			kind = Modified
		}
		if len(out) >= l.MaxChangedFiles {
			return nil, &ChangeLimitError{What: "files", Limit: int64(l.MaxChangedFiles), Flag: flagMaxChangedFiles}
		}
		c := Change{Path: p, Kind: kind, Mode: uint32(a.mode.Perm())}
		if a.mode.IsRegular() {
			c.Regular = true
			data, err := readBounded(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			c.Data = data
			if size += int64(len(data)); size > l.MaxChangedSize {
				return nil, &ChangeLimitError{What: "bytes", Limit: l.MaxChangedSize, Flag: flagMaxChangedSize}
			}
		}
		out = append(out, c)
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			if len(out) >= l.MaxChangedFiles {
				return nil, &ChangeLimitError{What: "files", Limit: int64(l.MaxChangedFiles), Flag: flagMaxChangedFiles}
			}
			out = append(out, Change{Path: p, Kind: Removed})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(f, maxChangedFileSize+1))
	if err != nil {
		return nil, err
	}
	if n > maxChangedFileSize {
		return nil, fmt.Errorf("changed to more than %d bytes", maxChangedFileSize)
	}
	return buf.Bytes(), nil
}
