package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// ReadFile returns the content of the regular file name (relative to the root of the artifact,
// cleaned as Extract cleans entry names) in the gzipped tarball r, for a consumer that needs one
// file and not the tree. At most maxSize bytes of it are held; the other entries' bodies are
// skipped, never kept. It refuses, with an error wrapping ErrUnsafePath, ErrFileNotFound,
// ErrUnsupportedEntry, ErrTooLarge or ErrTooManyFiles: a name that is absolute or climbs out with
// `..`, an archive holding such an entry (which Extract refuses too), a name the archive does not
// hold, an entry of that name that is not a regular file (a directory, a symlink, a hard link:
// nothing is followed), a file over maxSize, and an archive over DefaultLimits. The whole archive
// is read: when it holds the name twice, the last entry is the one read, as Extract leaves it.
func ReadFile(r io.Reader, name string, maxSize int64) ([]byte, error) {
	return readFile(r, name, maxSize, DefaultLimits)
}

// readFile is ReadFile within limits.
func readFile(r io.Reader, name string, maxSize int64, limits Limits) ([]byte, error) {
	limits = limits.withDefaults()
	want, err := cleanName(name)
	if err != nil {
		return nil, err
	}
	if want == "." {
		return nil, fmt.Errorf("%w: '%s' is the root of the artifact, not a file", ErrUnsupportedEntry, name)
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("artifact is not a gzip archive: %w", err)
	}
	defer gz.Close()

	// data and outcome are what the last entry named want holds; total is the content so far.
	var data []byte
	outcome := fmt.Errorf("'%s': %w", want, ErrFileNotFound)
	var total int64
	tr := tar.NewReader(gz)
	for files := 0; ; files++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("artifact is not a valid tar archive: %w", err)
		}
		if files >= limits.MaxFiles {
			return nil, fmt.Errorf("%w: more than %d entries", ErrTooManyFiles, limits.MaxFiles)
		}
		entry, err := cleanName(hdr.Name)
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag == tar.TypeReg {
			// The same bound as Extract's on the content it would write.
			if total += hdr.Size; total > limits.MaxSize {
				return nil, fmt.Errorf("%w: extracted content exceeds %d bytes at '%s'", ErrTooLarge, limits.MaxSize, entry)
			}
		}
		if entry != want || hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		data, outcome = readEntry(hdr, tr, entry, maxSize)
	}
	if outcome != nil {
		return nil, outcome
	}
	return data, nil
}

// readEntry reads the body of the entry name, a regular file of at most maxSize bytes.
func readEntry(hdr *tar.Header, body io.Reader, name string, maxSize int64) ([]byte, error) {
	if hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%w: '%s' is a %s, not a regular file", ErrUnsupportedEntry, name, entryKind(hdr.Typeflag))
	}
	if hdr.Size > maxSize {
		return nil, fmt.Errorf("%w: '%s' is %d bytes, the limit is %d", ErrTooLarge, name, hdr.Size, maxSize)
	}
	var buf bytes.Buffer
	// The header's size is what tar reads; the limit guards a reader that says otherwise.
	n, err := io.Copy(&buf, io.LimitReader(body, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading '%s': %w", name, err)
	}
	if n > maxSize {
		return nil, fmt.Errorf("%w: '%s' is over the limit of %d bytes", ErrTooLarge, name, maxSize)
	}
	return buf.Bytes(), nil
}

// entryKind names the type of a tar entry that is not a regular file.
func entryKind(t byte) string {
	switch t {
	case tar.TypeDir:
		return "directory"
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	default:
		return typeName(t)
	}
}
