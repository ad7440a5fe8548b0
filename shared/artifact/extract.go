package artifact

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound what an extraction may write.
type Limits struct {
	// MaxSize is the total number of bytes of the extracted files (default 1 GiB).
	MaxSize int64
	// MaxFiles is the number of entries in the archive (default 100,000).
	MaxFiles int
}

// DefaultLimits are used for zero fields of Limits.
var DefaultLimits = Limits{MaxSize: 1 << 30, MaxFiles: 100_000}

func (l Limits) withDefaults() Limits {
	if l.MaxSize <= 0 {
		l.MaxSize = DefaultLimits.MaxSize
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultLimits.MaxFiles
	}
	return l
}

// Extract writes the gzipped tarball r into dir, which must exist. It refuses, with an error
// wrapping ErrUnsafePath, ErrUnsupportedEntry, ErrTooLarge or ErrTooManyFiles:
// absolute names, names that climb out with `..`, symbolic and hard links whose target lies outside
// dir, device files and FIFOs, and archives over the limits. All writes go through an os.Root, so
// no entry can be written through a link to outside dir either.
func Extract(r io.Reader, dir string, limits Limits) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("artifact is not a gzip archive: %w", err)
	}
	defer gz.Close()
	return ExtractTar(gz, dir, limits)
}

// ExtractTar is Extract for an uncompressed tar stream, with the same checks and limits.
func ExtractTar(r io.Reader, dir string, limits Limits) error {
	limits = limits.withDefaults()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()

	x := extractor{root: root, remaining: limits.MaxSize, dirs: map[string]bool{".": true}, buf: make([]byte, 32<<10)}
	tr := tar.NewReader(r)
	for files := 0; ; files++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("artifact is not a valid tar archive: %w", err)
		}
		if files >= limits.MaxFiles {
			return fmt.Errorf("%w: more than %d entries", ErrTooManyFiles, limits.MaxFiles)
		}
		if err := x.entry(hdr, tr, limits.MaxSize); err != nil {
			return err
		}
	}
	return x.checkLinks()
}

type extractor struct {
	dirs      map[string]bool // directories made so far, to skip repeated MkdirAll walks
	buf       []byte          // one copy buffer for every file
	root      *os.Root
	remaining int64
	links     []string
}

func (x *extractor) entry(hdr *tar.Header, body io.Reader, maxSize int64) error {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	if name == "." {
		return nil
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return unsafeIfEscape(name, err)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return unsafeIfEscape(name, x.mkdirAll(name))
	case tar.TypeReg:
		return x.file(name, hdr, body, maxSize)
	case tar.TypeSymlink:
		if err := checkSymlink(name, hdr.Linkname); err != nil {
			return err
		}
		x.links = append(x.links, name)
		return unsafeIfEscape(name, x.root.Symlink(hdr.Linkname, name))
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil {
			return fmt.Errorf("%w: hard link '%s' points to '%s', outside the artifact", ErrUnsafePath, name, hdr.Linkname)
		}
		if err := x.root.Link(target, name); err != nil {
			return unsafeIfEscape(name, err)
		}
		// A hard link to a symlink is a second symlink with the same text, which resolves from
		// its own directory: `d/s -> ../x` is inside, a hard link `top` to it is not.
		if fi, err := x.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			text, err := x.root.Readlink(name)
			if err != nil {
				return fmt.Errorf("extracting '%s': %w", name, err)
			}
			if err := checkSymlink(name, text); err != nil {
				return fmt.Errorf("hard link '%s' to '%s': %w", name, target, err)
			}
			x.links = append(x.links, name)
		}
		return nil
	case tar.TypeXGlobalHeader:
		return nil
	default:
		return fmt.Errorf("%w: '%s' is a %s", ErrUnsupportedEntry, name, typeName(hdr.Typeflag))
	}
}

func (x *extractor) file(name string, hdr *tar.Header, body io.Reader, maxSize int64) error {
	if hdr.Size > x.remaining {
		return fmt.Errorf("%w: extracted content exceeds %d bytes at '%s'", ErrTooLarge, maxSize, name)
	}
	mode := fs.FileMode(0o644)
	if hdr.Mode&0o111 != 0 {
		mode = 0o755
	}
	f, err := x.root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return unsafeIfEscape(name, err)
	}
	// writerOnly hides os.File's ReadFrom, which would allocate a fresh buffer per file.
	n, err := io.CopyBuffer(writerOnly{f}, io.LimitReader(body, x.remaining+1), x.buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing '%s': %w", name, err)
	}
	if n > x.remaining {
		return fmt.Errorf("%w: extracted content exceeds %d bytes at '%s'", ErrTooLarge, maxSize, name)
	}
	x.remaining -= n
	return nil
}

// mkdirAll makes a directory (through the root) once per extraction. A directory made stays one:
// later entries cannot replace it with a link, as creating a link or file over it fails.
func (x *extractor) mkdirAll(name string) error {
	if x.dirs[name] {
		return nil
	}
	if err := x.root.MkdirAll(name, 0o755); err != nil {
		return err
	}
	x.dirs[name] = true
	return nil
}

type writerOnly struct{ io.Writer }

// checkLinks resolves every symlink once the whole tree exists: a chain of links that each look
// safe on their own (`a -> .`, `b -> a/..`) must not lead outside dir, not even to a path that
// does not exist (yet), nor pass outside dir on its way back in.
func (x *extractor) checkLinks() error {
	for _, name := range x.links {
		if x.leavesRoot(name) {
			text, _ := x.root.Readlink(name)
			return fmt.Errorf("%w: symlink '%s' points to '%s', which resolves outside the artifact",
				ErrUnsafePath, name, text)
		}
	}
	return nil
}

// maxLinkHops bounds the links followed while resolving one path; a longer chain is a loop,
// which resolves nowhere.
const maxLinkHops = 255

// leavesRoot follows the path name one component at a time, as the kernel does, reading the links
// it meets, and reports whether it ever passes outside the root. Components that do not exist
// are taken lexically, so a dangling link is judged by where it would lead.
func (x *extractor) leavesRoot(name string) bool {
	var resolved []string // the components resolved so far; never links, never ".."
	todo := strings.Split(name, "/")
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(resolved) == 0 {
				return true
			}
			resolved = resolved[:len(resolved)-1]
			continue
		}
		p := path.Join(path.Join(resolved...), c)
		fi, err := x.root.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			resolved = append(resolved, c)
			continue
		}
		if hops++; hops > maxLinkHops {
			return false
		}
		text, err := x.root.Readlink(p)
		if err != nil || path.IsAbs(text) || filepath.IsAbs(text) {
			return true
		}
		todo = append(strings.Split(text, "/"), todo...)
	}
	return false
}

// checkSymlink checks, lexically, the text of the symlink name.
func checkSymlink(name, text string) error {
	if path.IsAbs(text) || filepath.IsAbs(text) {
		return fmt.Errorf("%w: symlink '%s' points to the absolute path '%s'", ErrUnsafePath, name, text)
	}
	if escapes(path.Join(path.Dir(name), text)) {
		return fmt.Errorf("%w: symlink '%s' points to '%s', outside the artifact", ErrUnsafePath, name, text)
	}
	return nil
}

// cleanName checks a tar entry name and returns it cleaned, relative to the target.
func cleanName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: entry with an empty name", ErrUnsafePath)
	}
	if path.IsAbs(name) || filepath.IsAbs(name) || filepath.VolumeName(name) != "" {
		return "", fmt.Errorf("%w: entry '%s' is an absolute path", ErrUnsafePath, name)
	}
	clean := path.Clean(name)
	if escapes(clean) {
		return "", fmt.Errorf("%w: entry '%s' climbs out of the target with '..'", ErrUnsafePath, name)
	}
	return clean, nil
}

func escapes(clean string) bool {
	clean = path.Clean(clean)
	return clean == ".." || strings.HasPrefix(clean, "../")
}

// unsafeIfEscape reports an os.Root refusal (a write through a link to outside) as ErrUnsafePath.
func unsafeIfEscape(name string, err error) error {
	if err == nil {
		return nil
	}
	// os.Root does not export its error value; its text is "path escapes from parent".
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: '%s' would be written through a link that leaves the artifact", ErrUnsafePath, name)
	}
	return fmt.Errorf("extracting '%s': %w", name, err)
}

func typeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	default:
		return fmt.Sprintf("tar entry of type %q", t)
	}
}
