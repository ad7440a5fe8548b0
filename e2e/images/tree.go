package images

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is the modification time of every entry and the creation time of every image: the same
// inputs give the same layer and image digests, so an unchanged image is not written again and
// containerd keeps what it already has.
var epoch = time.Unix(0, 0).UTC()

// tree is the content of one layer, by absolute path in the image.
type tree struct {
	entries map[string]*entry
}

type entry struct {
	typeflag byte
	mode     int64
	uid, gid int
	linkname string
	data     []byte // a file given by its content
	src      string // a file copied from the host when it is written
	size     int64
}

func newTree() *tree { return &tree{entries: map[string]*entry{}} }

// dir adds a directory (and its parents, 0755 root).
func (t *tree) dir(p string, mode int64, uid, gid int) {
	t.parents(p)
	t.entries[clean(p)] = &entry{typeflag: tar.TypeDir, mode: mode, uid: uid, gid: gid}
}

// file adds a file with the given content, owned by root.
func (t *tree) file(p string, mode int64, data []byte) {
	t.parents(p)
	t.entries[clean(p)] = &entry{typeflag: tar.TypeReg, mode: mode, data: data, size: int64(len(data))}
}

// copy adds the host file src (symlinks followed) at p, owned by root, readable by everyone and
// executable by everyone when the host file is executable: the manifest-generator's runner
// runs its sessions as users of their own. The file is read when the layer is written; its size
// is taken now, so a file that changes in between fails the write instead of a corrupt layer.
func (t *tree) copy(p, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	t.parents(p)
	t.entries[clean(p)] = &entry{typeflag: tar.TypeReg, mode: mode, src: src, size: fi.Size()}
	return nil
}

// symlink adds a symbolic link at p to target.
func (t *tree) symlink(p, target string) {
	t.parents(p)
	t.entries[clean(p)] = &entry{typeflag: tar.TypeSymlink, mode: 0o777, linkname: target}
}

func (t *tree) has(p string) bool { _, ok := t.entries[clean(p)]; return ok }

func (t *tree) parents(p string) {
	for d := path.Dir(clean(p)); d != "/"; d = path.Dir(d) {
		if _, ok := t.entries[d]; !ok {
			t.entries[d] = &entry{typeflag: tar.TypeDir, mode: 0o755}
		}
	}
}

func clean(p string) string { return path.Clean("/" + p) }

// write writes the tree as a tar stream in path order, with fixed times and numeric owners.
func (t *tree) write(w io.Writer) error {
	paths := make([]string, 0, len(t.entries))
	for p := range t.entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	for _, p := range paths {
		e := t.entries[p]
		name := strings.TrimPrefix(p, "/")
		if e.typeflag == tar.TypeDir {
			name += "/"
		}
		hdr := &tar.Header{Typeflag: e.typeflag, Name: name, Linkname: e.linkname, Mode: e.mode,
			Uid: e.uid, Gid: e.gid, Size: e.size, ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		switch {
		case e.data != nil:
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
		case e.src != "":
			if err := copyFile(tw, e.src); err != nil {
				return fmt.Errorf("%s: %w", e.src, err)
			}
		}
	}
	return tw.Close()
}

func copyFile(w io.Writer, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// layer is the tree as an image layer: go-containerregistry compresses it once, at once, and
// keeps it in memory until the archive is written.
func (t *tree) layer() (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(t.write(pw)) }()
		return pr, nil
	}, tarball.WithCompressedCaching)
}
