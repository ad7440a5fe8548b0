package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/sluice-gitops/sluice/shared/artifact"
)

// ErrDigestMismatch is wrapped by the error of Verify. It is the error of the consumer side
// (shared/artifact), so one errors.Is check covers both.
var ErrDigestMismatch = artifact.ErrDigestMismatch

// Verify hashes the stored artifact file with the algorithm of a.Digest and fails, with an error
// wrapping ErrDigestMismatch, when the file is missing or unreadable, its size differs from
// a.Size, or its digest from a.Digest: in each case the artifact must be written again. A file
// with the size and modification time it had when it was written or last hashed is not hashed
// again (any write changes its modification time).
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
	if s.Remote != nil && errors.Is(err, fs.ErrNotExist) {
		rel, _ := cleanRel(a.Path)
		return s.verifyRemote(a, rel)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDigestMismatch, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDigestMismatch, err)
	}
	if a.Size != nil && fi.Size() != *a.Size {
		// A size check first spares hashing a file that is obviously wrong.
		return fmt.Errorf("%w: '%s' has %d bytes, expected %d", ErrDigestMismatch, a.Path, fi.Size(), *a.Size)
	}
	hash := func() (string, error) {
		d, err := digestOf(want.Algorithm(), f)
		return d.String(), err
	}
	var got string
	if want.Algorithm() == s.DigestAlgorithm {
		// The digest of this version of the file (same size and modification time) is known
		// since it was written or last hashed: every reconcile of an unchanged source verifies
		// its artifact, and hashing it each time would be most of the reconcile's CPU.
		rel, _ := cleanRel(a.Path)
		got, err = s.etags.get(rel, fi, hash)
	} else {
		got, err = hash()
	}
	if err != nil {
		return fmt.Errorf("%w: reading '%s': %w", ErrDigestMismatch, a.Path, err)
	}
	if got != want.String() {
		return fmt.Errorf("%w: '%s' has digest '%s', expected '%s'", ErrDigestMismatch, a.Path, got, want)
	}
	return nil
}
