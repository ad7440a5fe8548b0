package node

import (
	"archive/tar"
	"io"
	"time"
)

// tarOneFile writes a tar stream holding one regular file, root's, at a fixed time.
func tarOneFile(w io.Writer, name string, data []byte, mode int64) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
	}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	return tw.Close()
}
