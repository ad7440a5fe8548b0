package storage

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// writeTar writes the tar stream of fsys to w; see ArchiveFS for the normalisation.
func writeTar(w io.Writer, fsys fs.FS, filter func(p string, d fs.DirEntry) bool) error {
	tw := tar.NewWriter(w)
	buf := make([]byte, 64<<10) // one read buffer for every file
	var hdr tar.Header
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		if filter != nil && filter(name, d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			hdr = tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Format: tar.FormatPAX}
			return tw.WriteHeader(&hdr)
		case d.Type().IsRegular():
			return writeFile(tw, fsys, name, &hdr, buf)
		default:
			return nil // symlinks, devices, FIFOs, sockets: not part of an artifact
		}
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func writeFile(tw *tar.Writer, fsys fs.FS, name string, hdr *tar.Header, buf []byte) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil // replaced since the directory was read
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	size := fi.Size()
	*hdr = tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: mode, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	// Exactly the size announced in the header; a file's WriteTo is bypassed as it would
	// allocate a buffer per file.
	for left := size; left > 0; {
		chunk := buf
		if int64(len(chunk)) > left {
			chunk = chunk[:left]
		}
		n, err := io.ReadFull(f, chunk)
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return fmt.Errorf("'%s' shrank while being archived", name)
			}
			return err
		}
		if _, err := tw.Write(chunk[:n]); err != nil {
			return err
		}
		left -= int64(n)
	}
	return nil
}
