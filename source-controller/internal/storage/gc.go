package storage

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
)

// GarbageCollect deletes, in the directory of current, the artifact files other than current
// that are both older than RetentionTTL and beyond the newest RetentionRecords files (current
// counts as one of them, whatever its age). Symlinks and lock files are never touched;
// temporary files and links left by an interrupted write are deleted once older than RetentionTTL. It
// returns the absolute paths deleted, also when it stops on an error or at timeout (0: none).
func (s *Storage) GarbageCollect(ctx context.Context, current meta.Artifact, timeout time.Duration) ([]string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p, err := s.localPath(current)
	if err != nil {
		return nil, err
	}
	dir, err := s.objectDir(current)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("garbage collecting artifacts: %w", err)
	}

	var files, garbage []file
	now := time.Now()
	for _, e := range entries {
		name := e.Name()
		temp := strings.HasPrefix(name, ".") && strings.Contains(name, tmpInfix)
		switch {
		case temp && (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0):
		case !e.Type().IsRegular() || strings.HasSuffix(name, ".lock"):
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // deleted meanwhile
		}
		f := file{path: filepath.Join(dir, name), mtime: info.ModTime()}
		if f.path == p {
			continue
		}
		f.expired = now.Sub(f.mtime) > s.RetentionTTL
		if temp {
			// Left by an interrupted write or Symlink: never an artifact record.
			if f.expired {
				garbage = append(garbage, f)
			}
			continue
		}
		files = append(files, f)
	}
	garbage = append(garbage, s.beyondRetention(files)...)

	var deleted []string
	for _, f := range garbage {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("garbage collecting artifacts: %w", err)
		}
		if err := os.Remove(f.path); err != nil && !os.IsNotExist(err) {
			return deleted, fmt.Errorf("garbage collecting artifacts: %w", err)
		}
		deleted = append(deleted, f.path)
	}
	if s.Remote != nil {
		return deleted, s.collectRemote(ctx, current)
	}
	return deleted, nil
}

// file is an artifact file that garbage collection may delete.
type file struct {
	path    string
	mtime   time.Time
	expired bool
}

// beyondRetention returns the files, other than the current artifact, that are expired and
// beyond the newest RetentionRecords (the current artifact holds one of the records).
func (s *Storage) beyondRetention(files []file) []file {
	// Newest first; ties by name so that the outcome does not depend on the directory order.
	slices.SortFunc(files, func(a, b file) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return cmp.Compare(b.path, a.path)
	})
	var garbage []file
	keep := s.RetentionRecords - 1
	for i, f := range files {
		if i >= keep && f.expired {
			garbage = append(garbage, f)
		}
	}
	return garbage
}
