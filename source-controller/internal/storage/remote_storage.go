package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
)

// What the Storage does with its Remote: upload what it writes, serve and verify what it does
// not have on its disk, and collect there as here.

// upload puts the artifact file f, just written (size bytes, digest), into the store.
func (s *Storage) upload(a meta.Artifact, f *os.File, size int64, digest string) error {
	rel, err := cleanRel(a.Path)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("writing artifact: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	return s.Remote.Put(ctx, rel, f, size, digest)
}

// serveRemote answers, from the store, a request for name that the local directory cannot
// (another replica wrote the artifact): a 404 when the store has no such object either.
func (s *Storage) serveRemote(w http.ResponseWriter, r *http.Request, name string) {
	obj, err := s.Remote.Open(r.Context(), name)
	if errors.Is(err, fs.ErrNotExist) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "storage unavailable", http.StatusServiceUnavailable)
		return
	}
	defer obj.Close()
	info := obj.Info()
	h := w.Header()
	if info.Digest != "" {
		h.Set("ETag", `"`+info.Digest+`"`)
	}
	h.Set("Content-Type", contentType(info.Name))
	http.ServeContent(w, r, path.Base(info.Name), info.ModTime, obj)
}

// verifyRemote is Verify of an artifact this replica does not have on its disk: the store's
// object must have been uploaded with the artifact's digest and size.
func (s *Storage) verifyRemote(a meta.Artifact, rel string) error {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	obj, err := s.Remote.Open(ctx, rel)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDigestMismatch, err)
	}
	defer obj.Close()
	info := obj.Info()
	if info.Link != "" || info.Name != rel || info.Digest != a.Digest || a.Size != nil && info.Size != *a.Size {
		return fmt.Errorf("%w: '%s' in the artifact store has digest '%s' and %d bytes, expected '%s'",
			ErrDigestMismatch, a.Path, info.Digest, info.Size, a.Digest)
	}
	return nil
}

// Localize returns the path of the artifact file on this replica's disk, downloading it from
// the store when another replica wrote it (and checking its digest), for the readers of a
// local file (a HelmRepository's index, a GitRepository's includes).
func (s *Storage) Localize(ctx context.Context, a meta.Artifact) (string, error) {
	p, err := s.localPath(a)
	if err != nil {
		return "", err
	}
	if s.Remote == nil {
		return p, nil
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		return p, nil
	}
	rel, _ := cleanRel(a.Path)
	obj, err := s.Remote.Open(ctx, rel)
	if err != nil {
		return "", err
	}
	defer obj.Close()
	if obj.Info().Digest != a.Digest {
		return "", fmt.Errorf("%w: '%s' in the artifact store has digest '%s', expected '%s'", ErrDigestMismatch, a.Path, obj.Info().Digest, a.Digest)
	}
	local := a
	err = s.write(&local, false, func(w io.Writer) error {
		_, err := io.Copy(w, obj)
		return err
	})
	if err != nil {
		return "", err
	}
	if local.Digest != a.Digest {
		_ = os.Remove(p)
		return "", fmt.Errorf("%w: '%s' from the artifact store has digest '%s', expected '%s'", ErrDigestMismatch, a.Path, local.Digest, a.Digest)
	}
	return p, nil
}

// collectRemote applies the retention rules of GarbageCollect to the store's objects of the
// directory of current that are older than current. A newer one may be the current artifact
// of another replica (one that took the object over while this one finished): it stays, as do
// current and every link.
func (s *Storage) collectRemote(ctx context.Context, current meta.Artifact) error {
	rel, err := cleanRel(current.Path)
	if err != nil {
		return err
	}
	dir := path.Dir(rel)
	if dir == "." {
		return fmt.Errorf("artifact path '%s' is not inside an object directory", current.Path)
	}
	// Every reconcile collects, and a listing of the store each time would cost a request per
	// object and interval: the store is listed again when the current artifact changed, or
	// after remoteCollectEvery.
	if !s.collected.due(dir, rel, time.Now()) {
		return nil
	}
	objects, err := s.Remote.List(ctx, dir)
	if err != nil {
		return fmt.Errorf("garbage collecting artifacts: %w", err)
	}
	var since time.Time
	for _, o := range objects {
		if o.Name == rel {
			since = o.ModTime
		}
	}
	if since.IsZero() {
		return nil // current is not in the store: nothing tells what is older
	}
	now := time.Now()
	var files []file
	for _, o := range objects {
		// Links are empty objects; an artifact never is (an archive has a header).
		if o.Name == rel || o.Size == 0 || path.Dir(o.Name) != dir || !o.ModTime.Before(since) {
			continue
		}
		files = append(files, file{path: o.Name, mtime: o.ModTime, expired: now.Sub(o.ModTime) > s.RetentionTTL})
	}
	for _, f := range s.beyondRetention(files) {
		if err := s.Remote.Delete(ctx, f.path); err != nil {
			return fmt.Errorf("garbage collecting artifacts: %w", err)
		}
	}
	return nil
}

// removeRemote deletes the store's objects of the directory dir (relative).
func (s *Storage) removeRemote(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	objects, err := s.Remote.List(ctx, filepath.ToSlash(dir))
	if err != nil {
		return fmt.Errorf("removing artifacts: %w", err)
	}
	for _, o := range objects {
		if err := s.Remote.Delete(ctx, o.Name); err != nil {
			return fmt.Errorf("removing artifacts: %w", err)
		}
	}
	return nil
}

// remoteCollectEvery is how often the store is collected for an object whose artifact did not
// change.
const remoteCollectEvery = 10 * time.Minute

// collections are the last collections in the store, by object directory.
type collections struct {
	mu sync.Mutex
	m  map[string]collection
}

type collection struct {
	current string
	at      time.Time
}

// due says whether dir, whose current artifact is current, is to be collected at now, and
// records that it is.
func (c *collections) due(dir, current string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.m[dir]
	if ok && last.current == current && now.Sub(last.at) < remoteCollectEvery {
		return false
	}
	if len(c.m) >= maxCollections {
		clear(c.m) // forgetting only costs one listing per object
	}
	c.m[dir] = collection{current: current, at: now}
	return true
}

// maxCollections bounds the memory of collections.
const maxCollections = 100000
