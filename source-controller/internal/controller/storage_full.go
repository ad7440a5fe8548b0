package controller

import (
	"errors"
	"fmt"
	"syscall"
)

// storageFull says that the artifact volume is full when a write failed for lack of space: the
// bare "no space left on device" names a temporary file, not what the user has to act on.
func storageFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("artifact storage is full (ENOSPC): free space on the volume of --storage-path or make it larger: %w", err)
	}
	return err
}
