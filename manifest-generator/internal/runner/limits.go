package runner

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits bound what one session may take of the runner's container, so that a tenant's
// commands cannot starve the sessions of other tenants or fill the pod's volumes. The daemon
// hands them to each session process, which applies them to itself and, by inheritance, to
// every command it starts.
type Limits struct {
	// MaxProcesses is RLIMIT_NPROC: the processes and threads of the session's user. It is
	// set only when sessions run as users of their own (the count is per user).
	MaxProcesses int
	// MaxOpenFiles is RLIMIT_NOFILE of each process.
	MaxOpenFiles int
	// MaxFileSize is RLIMIT_FSIZE: the largest file a process may write.
	MaxFileSize int64
	// MaxCPUTime is RLIMIT_CPU of each process.
	MaxCPUTime time.Duration
	// MaxDisk bounds the bytes of the session's directory (its tree, HOME and TMPDIR); a
	// command running when it is passed is killed.
	MaxDisk int64
	// MaxFiles bounds the number of files and directories of the session's directory.
	MaxFiles int
	// MaxChangedFiles and MaxChangedSize bound the changes a session reports back (the
	// updaters' edits the controller verifies and commits).
	MaxChangedFiles int
	MaxChangedSize  int64
	// MaxTimeout caps the timeout of every command, whatever spec.timeout or the .flux.yaml ask.
	MaxTimeout time.Duration
}

// DefaultLimits are the runner's defaults: far above what kustomize, helm and the updaters of
// one repository need, far below what would starve the other sessions.
var DefaultLimits = Limits{
	MaxProcesses:    512,
	MaxOpenFiles:    1024,
	MaxFileSize:     256 << 20,
	MaxCPUTime:      10 * time.Minute,
	MaxDisk:         1 << 30,
	MaxFiles:        100_000,
	MaxChangedFiles: 256,
	MaxChangedSize:  32 << 20,
	MaxTimeout:      10 * time.Minute,
}

// Flag names of the limits, also named in the errors that report them.
const (
	flagMaxProcesses    = "max-session-processes"
	flagMaxOpenFiles    = "max-session-open-files"
	flagMaxFileSize     = "max-session-file-size"
	flagMaxCPUTime      = "max-session-cpu-time"
	flagMaxDisk         = "max-session-disk"
	flagMaxFiles        = "max-session-files"
	flagMaxChangedFiles = "max-changed-files"
	flagMaxChangedSize  = "max-changed-size"
	flagMaxTimeout      = "max-command-timeout"
)

// BindFlags registers the limits as flags of the runner subcommand, with l's values as defaults.
func (l *Limits) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&l.MaxProcesses, flagMaxProcesses, l.MaxProcesses, "The processes and threads of one session (RLIMIT_NPROC of its user; with --job-users only).")
	fs.IntVar(&l.MaxOpenFiles, flagMaxOpenFiles, l.MaxOpenFiles, "The open files of each process of a session (RLIMIT_NOFILE).")
	fs.Int64Var(&l.MaxFileSize, flagMaxFileSize, l.MaxFileSize, "The largest file, in bytes, a process of a session may write (RLIMIT_FSIZE).")
	fs.DurationVar(&l.MaxCPUTime, flagMaxCPUTime, l.MaxCPUTime, "The CPU time of each process of a session (RLIMIT_CPU).")
	fs.Int64Var(&l.MaxDisk, flagMaxDisk, l.MaxDisk, "The bytes of a session's files (tree, HOME, TMPDIR); a command that passes it is killed.")
	fs.IntVar(&l.MaxFiles, flagMaxFiles, l.MaxFiles, "The number of files and directories of a session; a command that passes it is killed.")
	fs.IntVar(&l.MaxChangedFiles, flagMaxChangedFiles, l.MaxChangedFiles, "The number of files the updaters of one session may change.")
	fs.Int64Var(&l.MaxChangedSize, flagMaxChangedSize, l.MaxChangedSize, "The total bytes of the files the updaters of one session may change.")
	fs.DurationVar(&l.MaxTimeout, flagMaxTimeout, l.MaxTimeout, "The longest timeout of a command, whatever the ManifestGeneration or .flux.yaml ask.")
}

// args are the runner's flags that set l.
func (l Limits) args() []string {
	return []string{
		"--" + flagMaxProcesses + "=" + strconv.Itoa(l.MaxProcesses),
		"--" + flagMaxOpenFiles + "=" + strconv.Itoa(l.MaxOpenFiles),
		"--" + flagMaxFileSize + "=" + strconv.FormatInt(l.MaxFileSize, 10),
		"--" + flagMaxCPUTime + "=" + l.MaxCPUTime.String(),
		"--" + flagMaxDisk + "=" + strconv.FormatInt(l.MaxDisk, 10),
		"--" + flagMaxFiles + "=" + strconv.Itoa(l.MaxFiles),
		"--" + flagMaxChangedFiles + "=" + strconv.Itoa(l.MaxChangedFiles),
		"--" + flagMaxChangedSize + "=" + strconv.FormatInt(l.MaxChangedSize, 10),
		"--" + flagMaxTimeout + "=" + l.MaxTimeout.String(),
	}
}

func (l Limits) validate() error {
	if l.MaxProcesses <= 0 || l.MaxOpenFiles <= 0 || l.MaxFileSize <= 0 || l.MaxCPUTime <= 0 || l.MaxDisk <= 0 ||
		l.MaxFiles <= 0 || l.MaxChangedFiles <= 0 || l.MaxChangedSize <= 0 || l.MaxTimeout <= 0 {
		return fmt.Errorf("every session limit must be positive: %+v", l)
	}
	return nil
}

// apply sets the resource limits of the calling process (soft and hard: the commands cannot
// raise them again); the processes it starts inherit them. perUser says the process runs as a
// user of its own, so that RLIMIT_NPROC counts only the session, and the disk meter counts the
// open files of every process of that user.
func (l Limits) apply(perUser bool) error {
	set := func(what string, resource int, v uint64) error {
		if err := unix.Setrlimit(resource, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setting the session's %s limit: %w", what, err)
		}
		return nil
	}
	if perUser {
		if err := set("process", unix.RLIMIT_NPROC, uint64(l.MaxProcesses)); err != nil {
			return err
		}
		sessionUser = os.Getuid()
	}
	if err := set("file size", unix.RLIMIT_FSIZE, uint64(l.MaxFileSize)); err != nil {
		return err
	}
	if err := set("CPU time", unix.RLIMIT_CPU, uint64((l.MaxCPUTime+time.Second-1)/time.Second)); err != nil {
		return err
	}
	// Through syscall, so that the Go runtime hands this limit, not the one it found at start,
	// to the commands it starts.
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: uint64(l.MaxOpenFiles), Max: uint64(l.MaxOpenFiles)}); err != nil {
		return fmt.Errorf("setting the session's open file limit: %w", err)
	}
	// No core files: they would land in the tree, and hold the memory of what crashed.
	return set("core file", unix.RLIMIT_CORE, 0)
}
