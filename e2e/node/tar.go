package node

import (
	"archive/tar"
	"io"
	"slices"
	"time"
)

// tarFiles writes a tar stream of regular files (by name), root's, with mode, at a fixed time
// and in name order, so that the same files give the same layer.
func tarFiles(w io.Writer, files map[string][]byte, mode int64) error {
	tw := tar.NewWriter(w)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg, Name: n, Mode: mode, Size: int64(len(files[n])),
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
		}); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	return tw.Close()
}
