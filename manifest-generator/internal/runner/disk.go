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

// DiskLimitError is a session whose files grew past Limits.MaxDisk or Limits.MaxFiles, or
// that hides some of them from the runner's measure.
type DiskLimitError struct {
	// What is "bytes" or "files"; Limit the limit passed, Flag the runner flag that sets it.
	What  string
	Limit int64
	Flag  string
	// Why is set when the session counts as over the limit because it hid files from the
	// measure: a directory it cannot read, a process whose open files cannot be read.
	Why string
	// Unlinked is how many of the bytes measured are in files deleted while still open.
	Unlinked int64
	// Whose limit it is, for people: "the runner's" when empty.
	Whose string
}

func (e *DiskLimitError) Error() string {
	whose := e.Whose
	if whose == "" {
		whose = "the runner's"
	}
	msg := fmt.Sprintf("the session's files are over %s limit of %d %s (--%s)", whose, e.Limit, e.What, e.Flag)
	switch {
	case e.Why != "":
		msg += ": " + e.Why
	case e.Unlinked > 0:
		msg += fmt.Sprintf(", %d bytes of them in files deleted while still open", e.Unlinked)
	}
	return msg
}

// diskMeter measures the disk a session takes: the files of its directory (its tree, HOME and
// TMPDIR), and the files its processes deleted but hold open, which take their blocks until
// they are closed. What it cannot measure counts as over the limit: a directory of the session
// that cannot be read (the commands run as the session's user, who may take the read or
// search bit off its own directories, and the job runs as that user too), a process whose open
// files cannot be read (openfiles.go).
type diskMeter struct {
	dir    string
	limits Limits
	// hidden are the processes whose open files could not be read at the previous check, and
	// when they were first found so.
	hidden map[int]time.Time
}

// hiddenGrace is how long a process of the session may hold files the meter cannot measure
// before the session counts as over its limit: a process the job forks has the job's
// undumpable memory until it executes its command, which takes microseconds, or longer on a
// starved machine; a program may unlink a file it maps just before it unmaps it. What it
// writes meanwhile goes when it is killed.
const hiddenGrace = time.Second

// checkDisk measures dir and the session's open deleted files once, and reports a
// *DiskLimitError when they are over l's limits.
func checkDisk(dir string, l Limits) error {
	return (&diskMeter{dir: dir, limits: l}).check()
}

// check measures the session and reports a *DiskLimitError when it is over the limits. The
// deleted files first, then the directory (file sizes by their blocks, so sparse files count
// what they hold); the walk stops as soon as the session is over. Both are bounded by the
// session's limits: its processes, their open files, its files.
func (m *diskMeter) check() error {
	l := m.limits
	unlinked, hidden := openUnlinkedBytes(l.MaxDisk, m.dir)
	now := time.Now()
	seen := make(map[int]time.Time, len(hidden))
	for _, h := range hidden {
		first, ok := m.hidden[h.pid]
		if !ok {
			first = now
		}
		if now.Sub(first) >= hiddenGrace {
			return &DiskLimitError{What: "bytes", Limit: l.MaxDisk, Flag: flagMaxDisk,
				Why: fmt.Sprintf("process %d (%s) of the session %s: counted as over the limit", h.pid, h.name, h.what)}
		}
		seen[h.pid] = first
	}
	m.hidden = seen
	if unlinked > l.MaxDisk {
		return &DiskLimitError{What: "bytes", Limit: l.MaxDisk, Flag: flagMaxDisk, Unlinked: unlinked}
	}
	size := unlinked
	var files int64
	var over error
	err := filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted meanwhile
			}
			over = m.unreadable(p)
			return errOverBudget
		}
		files++
		if files > int64(l.MaxFiles) {
			over = &DiskLimitError{What: "files", Limit: int64(l.MaxFiles), Flag: flagMaxFiles}
			return errOverBudget
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			switch {
			case err == nil:
				size += fileBytes(fi)
			case !errors.Is(err, fs.ErrNotExist):
				// Listed, but its directory cannot be searched.
				over = m.unreadable(filepath.Dir(p))
				return errOverBudget
			}
			if size > l.MaxDisk {
				over = &DiskLimitError{What: "bytes", Limit: l.MaxDisk, Flag: flagMaxDisk, Unlinked: unlinked}
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

// unreadable is the error of the session's directory p that cannot be read: what it holds
// cannot be measured, so it counts as over the limit.
func (m *diskMeter) unreadable(p string) *DiskLimitError {
	rel, err := filepath.Rel(m.dir, p)
	if err != nil {
		rel = p
	}
	return &DiskLimitError{What: "bytes", Limit: m.limits.MaxDisk, Flag: flagMaxDisk,
		Why: fmt.Sprintf("directory %s of the session cannot be read: counted as over the limit", filepath.ToSlash(rel))}
}

// watchDisk calls stop with the *DiskLimitError of dir as soon as a check finds it over l,
// until ctx ends.
func watchDisk(ctx context.Context, dir string, l Limits, stop context.CancelCauseFunc) {
	m := &diskMeter{dir: dir, limits: l}
	t := time.NewTicker(diskCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			var dl *DiskLimitError
			if err := m.check(); errors.As(err, &dl) {
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
