package storage

import (
	"fmt"
	"os"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/sluice-gitops/sluice/shared/artifact"
)

// ErrDigestMismatch is wrapped by the error of Verify. It is the error of the consumer side
// (shared/artifact), so one errors.Is check covers both.
var ErrDigestMismatch = artifact.ErrDigestMismatch

// Verify hashes the stored artifact file with the algorithm of a.Digest and fails, with an error
// wrapping ErrDigestMismatch, when the file is missing or unreadable, its size differs from
// a.Size, or its digest from a.Digest: in each case the artifact must be written again.
func (s *Storage) Verify(a meta.Artifact) error {
	want, err := artifact.ParseDigest(a.Digest)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDigestMismatch, err)
	}
	p, err := s.localPath(a)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDigestMismatch, err)
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDigestMismatch, err)
	}
	defer f.Close()
	if a.Size != nil {
		// A size check first spares hashing a file that is obviously wrong.
		if fi, err := f.Stat(); err == nil && fi.Size() != *a.Size {
			return fmt.Errorf("%w: '%s' has %d bytes, expected %d", ErrDigestMismatch, a.Path, fi.Size(), *a.Size)
		}
	}
	got, err := digestOf(want.Algorithm(), f)
	if err != nil {
		return fmt.Errorf("%w: reading '%s': %w", ErrDigestMismatch, a.Path, err)
	}
	if got != want {
		return fmt.Errorf("%w: '%s' has digest '%s', expected '%s'", ErrDigestMismatch, a.Path, got, want)
	}
	return nil
}
