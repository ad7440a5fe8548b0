package images_test

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/sluice-gitops/sluice/e2e/images"
)

// imageFS is an image's filesystem as a container sees it: its layers squashed
// (go-containerregistry's mutate.Extract).
type imageFS struct {
	headers  map[string]*tar.Header // by absolute path
	contents map[string][]byte      // files up to 1 MiB
	sums     map[string]string      // sha256 of every file
}

// readImage reads a controller's archive back as `docker load` and `ctr images import` do:
// through its manifest.json, by its tag.
func readImage(t *testing.T, controller string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(images.Ref(controller))
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(images.Archive(archives, controller), &tag)
	if err != nil {
		t.Fatalf("reading %s by its tag: %v", controller, err)
	}
	return img
}

func squash(t *testing.T, img v1.Image) *imageFS {
	t.Helper()
	fs := &imageFS{headers: map[string]*tar.Header{}, contents: map[string][]byte{}, sums: map[string]string{}}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return fs
		}
		if err != nil {
			t.Fatal(err)
		}
		p := path.Clean("/" + hdr.Name)
		fs.headers[p] = hdr
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if hdr.Size > 1<<20 {
			h := sha256.New()
			if _, err := io.Copy(h, tr); err != nil {
				t.Fatal(err)
			}
			fs.sums[p] = hex.EncodeToString(h.Sum(nil))
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		fs.sums[p], fs.contents[p] = hex.EncodeToString(sum[:]), b
	}
}

// resolve follows symbolic links inside the image, as the kernel does in the container.
func (fs *imageFS) resolve(p string) (string, *tar.Header) {
	for range 40 {
		hdr, ok := fs.headers[p]
		if !ok {
			return p, nil
		}
		if hdr.Typeflag != tar.TypeSymlink {
			return p, hdr
		}
		if path.IsAbs(hdr.Linkname) {
			p = path.Clean(hdr.Linkname)
		} else {
			p = path.Join(path.Dir(p), hdr.Linkname)
		}
	}
	return p, nil
}

// lookPath finds an executable for everyone on a PATH of the image, as a shell would.
func (fs *imageFS) lookPath(file, pathList string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		p := path.Join(dir, file)
		if _, hdr := fs.resolve(p); hdr != nil && hdr.Typeflag == tar.TypeReg && hdr.Mode&0o001 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not an executable file for everyone in %s", file, pathList)
}

// extract writes an image's filesystem into dir, with its owners when the test runs as root.
func extract(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var dirs []*tar.Header // modes and owners set last: a 0700 directory stays writable until then
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+hdr.Name)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, hdr)
			continue
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, p); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, os.FileMode(hdr.Mode&0o777)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: unexpected tar entry type %q", hdr.Name, hdr.Typeflag)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		hdr := dirs[i]
		p := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+hdr.Name)))
		mode := os.FileMode(hdr.Mode&0o777) | os.ModeDir
		if hdr.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The root of the image is the container's /: everyone may pass through it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
