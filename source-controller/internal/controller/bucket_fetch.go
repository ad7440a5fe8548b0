package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/source-controller/internal/bucket"
	"github.com/sluice-gitops/sluice/source-controller/internal/sizelimit"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// maxConcurrentBucketFetches bounds the downloads under way at once for one Bucket, so that a
// bucket of many objects takes neither unbounded memory nor connections.
const maxConcurrentBucketFetches = 20

// errBucketTooLarge is wrapped by the error of objects over --artifact-max-size.
var errBucketTooLarge = errors.New("bucket objects are over --artifact-max-size")

// bucketTooLarge is the error of the bucket's objects of size bytes (more, when partial) over limit.
func bucketTooLarge(name string, size, limit int64, partial bool) error {
	return &sizelimit.Error{What: fmt.Sprintf("the content of bucket '%s'", name), Size: size, Partial: partial,
		Flag: "--artifact-max-size", Limit: limit, Err: errors.Join(errBucketTooLarge, storage.ErrArtifactTooLarge)}
}

// fetchObjects downloads the objects of the index into dir, each at its key, 20 at a time, their
// sizes together bounded by limit (0: none) while they are read, as the server may send more
// than it listed. The index is updated to what the downloads found: an object deleted since the
// listing is dropped, one changed since has its new ETag.
func fetchObjects(ctx context.Context, c *bucket.Client, name string, ix bucketIndex, dir string, limit int64) error {
	root, err := os.OpenRoot(dir) // keys like "../x" cannot leave dir
	if err != nil {
		return err
	}
	defer root.Close()
	var (
		mu   sync.Mutex
		used atomic.Int64
	)
	keys := make([]string, 0, len(ix))
	for k := range ix {
		keys = append(keys, k)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentBucketFetches)
	for _, key := range keys {
		g.Go(func() error {
			if d := path.Dir(key); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return fmt.Errorf("object '%s': %w", key, err)
				}
			}
			f, err := root.Create(key)
			if err != nil {
				return fmt.Errorf("object '%s': %w", key, err)
			}
			defer f.Close()
			w := &budgetWriter{w: f, used: &used, limit: limit, name: name}
			got, err := c.Get(gctx, name, key, w)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case bucket.IsNotFound(err):
				log.FromContext(ctx).Info(fmt.Sprintf("object '%s' disappeared from bucket '%s' since it was listed", key, name))
				delete(ix, key)
				_ = root.Remove(key)
				return nil
			case err != nil:
				return fmt.Errorf("getting object '%s': %w", key, err)
			}
			if got.ETag != ix[key].ETag {
				ix[key] = got
			}
			return f.Close()
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("fetching from bucket '%s': %w", name, err)
	}
	return nil
}

// budgetWriter counts what all downloads of one fetch write together, and fails the one that
// goes over the limit.
type budgetWriter struct {
	w     io.Writer
	used  *atomic.Int64
	limit int64
	name  string
}

func (b *budgetWriter) Write(p []byte) (int, error) {
	if n := b.used.Add(int64(len(p))); b.limit > 0 && n > b.limit {
		return 0, bucketTooLarge(b.name, b.limit, b.limit, true)
	}
	return b.w.Write(p)
}
