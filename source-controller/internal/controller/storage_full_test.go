package controller

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

func TestStorageFullNamesTheFullVolume(t *testing.T) {
	g := NewWithT(t)
	full := fmt.Errorf("archiving revision 'main@sha1:abc': %w", &fs.PathError{Op: "write", Path: "/data/.a.tar.gz.tmp-1", Err: syscall.ENOSPC})
	g.Expect(storageFull(full).Error()).To(Equal("artifact storage is full (ENOSPC): free space on the volume of --storage-path or make it larger: " +
		"archiving revision 'main@sha1:abc': write /data/.a.tar.gz.tmp-1: no space left on device"))
	g.Expect(errors.Is(storageFull(full), syscall.ENOSPC)).To(BeTrue())
	other := errors.New("permission denied")
	g.Expect(storageFull(other)).To(BeIdenticalTo(other))
}
