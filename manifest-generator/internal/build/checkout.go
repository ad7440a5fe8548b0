package build

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/apis/meta"

	"github.com/sluice-gitops/sluice/shared/artifact"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Names under the storage path: a checkout is named by the hex of its digest; artifact.Fetcher
// stages an extraction in ".artifact-*" beside it; a checkout being deleted is renamed to
// ".gc-*" first, so that its name is free at once and a half-deleted tree is never used.
const (
	stagingPrefix = ".artifact-"
	gcPrefix      = ".gc-"
)

// checkouts keeps the extracted artifacts under one directory, one per digest, shared by every
// Build of that digest. A checkout is fetched once, by the first Build that needs it, while the
// others wait for it; it is made read-only so that the controller's own code never changes it.
// Commands never see it: they run in the runner, on a private copy. Checkouts in use are never deleted;
// beyond max, the least recently used idle ones are.
type checkouts struct {
	dir     string
	fetcher *artifact.Fetcher
	max     int

	mu      sync.Mutex
	clock   uint64
	entries map[string]*checkout // by the hex of the digest
}

type checkout struct {
	dir   string
	ready chan struct{} // closed when the fetch ended; err is set before
	err   error
	users int    // Builds holding it; guarded by checkouts.mu
	used  uint64 // last acquisition, in ticks of checkouts.clock; guarded by checkouts.mu
}

// newCheckouts makes dir and removes what a previous process left in it: checkouts (which may
// be half-deleted), staged extractions and trees being deleted. Other names are left alone.
func newCheckouts(dir string, fetcher *artifact.Fetcher, max int) (*checkouts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("storage path: %w", err)
	}
	// Only the controller reads its checkouts (a local runner is another user). A volume's mount
	// point may not be ours to chmod: in a Pod the runner does not mount the volume at all.
	_ = os.Chmod(dir, 0o700)
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage path: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, stagingPrefix) || strings.HasPrefix(name, gcPrefix) || isDigestHex(name) {
			if err := runner.RemoveTree(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("storage path: removing a leftover checkout: %w", err)
			}
		}
	}
	return &checkouts{dir: dir, fetcher: fetcher, max: max, entries: map[string]*checkout{}}, nil
}

// acquire returns the checkout of art, named by the hex of its digest, fetching it unless it is
// there or being fetched. The caller must release it.
func (s *checkouts) acquire(ctx context.Context, art meta.Artifact, name string) (*checkout, error) {
	for {
		c, fetcher := s.enter(name)
		if fetcher {
			err := s.fetch(ctx, art, c.dir)
			s.mu.Lock()
			c.err = err
			if err != nil {
				// Not remembered: the next Build of this digest fetches again.
				delete(s.entries, name)
			}
			close(c.ready)
			s.mu.Unlock()
		} else {
			select {
			case <-c.ready:
			case <-ctx.Done():
				s.release(c)
				return nil, fmt.Errorf("waiting for the artifact of revision '%s': %w", art.Revision, ctx.Err())
			}
		}
		if c.err == nil {
			return c, nil
		}
		s.release(c)
		// The Build that fetched for us was cancelled, we were not: fetch it ourselves.
		if !fetcher && ctx.Err() == nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) {
			continue
		}
		return nil, c.err
	}
}

// enter registers a user of the checkout name, creating the entry when there is none, in which
// case the caller must fetch it (fetcher is true).
func (s *checkouts) enter(name string) (c *checkout, fetcher bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found := s.entries[name]
	if !found {
		c = &checkout{dir: filepath.Join(s.dir, name), ready: make(chan struct{})}
		s.entries[name] = c
	}
	c.users++
	s.clock++
	c.used = s.clock
	return c, !found
}

// release gives back a checkout and deletes checkouts beyond max that are not in use.
func (s *checkouts) release(c *checkout) {
	s.mu.Lock()
	c.users--
	var doomed []string
	if len(s.entries) > s.max {
		doomed = s.evictLocked()
	}
	s.mu.Unlock()
	for _, dir := range doomed {
		_ = runner.RemoveTree(dir) // a failure leaves a ".gc-*" tree, removed at the next start
	}
}

// evictLocked forgets the least recently used idle checkouts beyond max and renames their
// directories out of the way; it returns the renamed directories, to be removed unlocked.
func (s *checkouts) evictLocked() []string {
	var idle []string
	for name, c := range s.entries {
		if c.users == 0 {
			idle = append(idle, name)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return s.entries[idle[i]].used < s.entries[idle[j]].used })
	var doomed []string
	for _, name := range idle {
		if len(s.entries) <= s.max {
			break
		}
		c := s.entries[name]
		delete(s.entries, name)
		_ = os.Chmod(c.dir, 0o755)
		gone, err := os.MkdirTemp(s.dir, gcPrefix+"*")
		if err == nil {
			// Rename over the empty directory just made: the name is unique and the rename atomic.
			err = os.Rename(c.dir, gone)
		}
		if err != nil {
			// Delete in place, while no Build can fetch into the name again.
			_ = os.Remove(gone)
			_ = runner.RemoveTree(c.dir)
			continue
		}
		doomed = append(doomed, gone)
	}
	return doomed
}

// fetch downloads, verifies and extracts art into dir (artifact.Fetcher stages the extraction
// beside dir and renames it into place), then makes the tree read-only.
func (s *checkouts) fetch(ctx context.Context, art meta.Artifact, dir string) error {
	// A directory of this name is no checkout we know: a deletion that failed. Fetch needs the
	// name free.
	if err := runner.RemoveTree(dir); err != nil {
		return fmt.Errorf("removing the stale checkout %s: %w", dir, err)
	}
	if err := s.fetcher.Fetch(ctx, art.URL, art.Digest, dir); err != nil {
		return fetchError(fmt.Errorf("fetching the artifact of revision '%s': %w", art.Revision, err))
	}
	if err := makeReadOnly(dir); err != nil {
		_ = runner.RemoveTree(dir)
		return fmt.Errorf("checkout of revision '%s': %w", art.Revision, err)
	}
	return nil
}

// close deletes every checkout not in use.
func (s *checkouts) close() error {
	s.mu.Lock()
	var dirs []string
	for name, c := range s.entries {
		if c.users == 0 {
			delete(s.entries, name)
			dirs = append(dirs, c.dir)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, dir := range dirs {
		errs = append(errs, runner.RemoveTree(dir))
	}
	return errors.Join(errs...)
}

// makeReadOnly takes the write bits off every directory and file of the tree (links are left
// alone: chmod would follow them). A controller running as root is not stopped by them.
func makeReadOnly(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Chmod(p, 0o555)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return os.Chmod(p, fi.Mode().Perm()&0o555)
		}
		return nil
	})
}

// isDigestHex reports whether name is the hex of a sha256, sha384 or sha512 digest, the names
// of checkouts.
func isDigestHex(name string) bool {
	switch len(name) {
	case 64, 96, 128:
	default:
		return false
	}
	for _, r := range name {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
