package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// diskCheckInterval is how often the files of a running command's session are measured.
const diskCheckInterval = 250 * time.Millisecond

// errOverBudget stops a walk that has seen enough to know the session is over its limits.
var errOverBudget = errors.New("over budget")

// DiskLimitError is a session whose files grew past Limits.MaxDisk or Limits.MaxFiles.
type DiskLimitError struct {
	// What is "bytes" or "files"; Limit the limit passed, Flag the runner flag that sets it.
	What  string
	Limit int64
	Flag  string
}

func (e *DiskLimitError) Error() string {
	return fmt.Sprintf("the session's files are over the runner's limit of %d %s (--%s)", e.Limit, e.What, e.Flag)
}

// checkDisk measures dir (file sizes by their blocks, so sparse files count what they hold) and
// reports a *DiskLimitError when it is over l's limits; the walk stops as soon as it is.
func checkDisk(dir string, l Limits) error {
	var size, files int64
	var over error
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone or unreadable meanwhile: the next check sees it
		}
		files++
		if files > int64(l.MaxFiles) {
			over = &DiskLimitError{What: "files", Limit: int64(l.MaxFiles), Flag: flagMaxFiles}
			return errOverBudget
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fileBytes(fi)
			}
			if size > l.MaxDisk {
				over = &DiskLimitError{What: "bytes", Limit: l.MaxDisk, Flag: flagMaxDisk}
				return errOverBudget
			}
		}
		return nil
	})
	if over != nil {
		return over
	}
	if err != nil && !errors.Is(err, errOverBudget) {
		return err
	}
	return nil
}

// watchDisk calls stop with the *DiskLimitError of dir as soon as a check finds it over l,
// until ctx ends.
func watchDisk(ctx context.Context, dir string, l Limits, stop context.CancelCauseFunc) {
	t := time.NewTicker(diskCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			var dl *DiskLimitError
			if err := checkDisk(dir, l); errors.As(err, &dl) {
				stop(dl)
				return
			}
		}
	}
}

// fileBytes is what a file takes on disk: its allocated blocks, or its size when larger (a
// sparse file counts what it could hold).
func fileBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 > fi.Size() {
		return st.Blocks * 512
	}
	return fi.Size()
}
