package build

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"syscall"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/shared/artifact"
)

// ErrEmpty is returned when the target path produced no objects while spec.prune is set and
// spec.allowEmpty is not: applying the empty set would delete everything applied before.
var ErrEmpty = errors.New("the target path produced no objects: set spec.allowEmpty to apply an empty set (it prunes everything)")

// IsTerminal reports whether err is a problem that retrying cannot fix, only a new revision of
// the source (or a change of the spec): an invalid .flux.yaml (*fluxyaml.ConfigError), generator
// output or raw files that are not usable objects (*fluxyaml.ManifestError), a malformed patch
// file, a target path that is missing or outside the artifact, an artifact that breaks the
// extraction rules, a reserved name in spec.env, ErrEmpty, and a generator printing more than
// --max-output-size (fluxyaml.ErrOutputTooLarge: the same revision prints the same again), and
// generators over the limits of a generation (*fluxyaml.LimitError).
//
// Everything else is transient and retried with backoff: a failing command (*fluxyaml.CommandError,
// passed through as it is), a download that failed or does not match its digest, I/O trouble.
func IsTerminal(err error) bool {
	if err == nil {
		return false
	}
	var t *terminalError
	var ce *fluxyaml.ConfigError
	var me *fluxyaml.ManifestError
	var le *fluxyaml.LimitError
	return errors.As(err, &t) || errors.As(err, &ce) || errors.As(err, &me) || errors.As(err, &le) || errors.Is(err, ErrEmpty) ||
		errors.Is(err, fluxyaml.ErrOutputTooLarge)
}

// terminalError marks an error that IsTerminal reports; its message is the wrapped one's.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

func terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// contentError classifies an error met while reading the checkout (lookup of the target path and
// of .flux.yaml, raw files, the patch file). The checkout is the verified, immutable content of
// the artifact, so such an error is terminal, unless it comes from the machine rather than the
// content: out of file descriptors, memory or disk, an I/O error, an interrupted call.
func contentError(err error) error {
	if err == nil || isEnvironmental(err) {
		return err
	}
	return terminal(err)
}

func isEnvironmental(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EIO, syscall.ENOSPC,
			syscall.EDQUOT, syscall.EAGAIN, syscall.EINTR, syscall.ESTALE:
			return true
		}
	}
	return false
}

// fetchError classifies an error of artifact.Fetcher.Fetch. An artifact whose verified bytes break
// the extraction rules (unsafe paths, special files, limits) or are no tar.gz at all stays broken
// until the source publishes a new revision: terminal. A failed download, a digest mismatch (the
// source may have moved on while we downloaded) and I/O trouble are retried.
func fetchError(err error) error {
	for _, target := range []error{
		artifact.ErrUnsafePath, artifact.ErrUnsupportedEntry, artifact.ErrTooManyFiles,
		artifact.ErrTooLarge, gzip.ErrHeader, gzip.ErrChecksum, tar.ErrHeader,
	} {
		if errors.Is(err, target) {
			return terminal(err)
		}
	}
	return err
}
