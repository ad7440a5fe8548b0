package imagescan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/errgroup"
)

// ErrNoMatchingTag is matched (errors.Is) by the NoMatchError Newest
// returns when no tag passes the filter.
var ErrNoMatchingTag = errors.New("no tag matches the filter")

// NoMatchError says that no tag of a repository passes a filter.
type NoMatchError struct {
	Repository string
	Filter     Filter
}

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("no tag of %s matches %s", e.Repository, e.Filter)
}

func (e *NoMatchError) Is(target error) bool { return target == ErrNoMatchingTag }

// Newest is the tag of repo a workload with filter should run: for a
// semver filter the highest matching version, from the tag list alone; for
// glob and regex filters the matching tag of the most recently created
// image. Ties go to the lexically greatest tag, so that the answer does
// not depend on the registry's order.
func (s *Scanner) Newest(ctx context.Context, repo name.Repository, filter Filter, opts Options) (string, error) {
	c, err := s.client(ctx, repo, opts)
	if err != nil {
		return "", err
	}
	tags, err := s.tagsOf(ctx, c)
	if err != nil {
		return "", err
	}
	var best string
	if filter.Kind() == KindSemver {
		best = newestVersion(tags, filter)
	} else if best, err = s.newestCreated(ctx, c, tags, filter); err != nil {
		return "", err
	}
	if best == "" {
		return "", &NoMatchError{Repository: c.repo.Name(), Filter: filter}
	}
	return best, nil
}

func newestVersion(tags []string, filter Filter) string {
	var best string
	var bestV *semver.Version
	for _, t := range tags {
		v, ok := filter.version(t)
		if !ok {
			continue
		}
		if bestV == nil || v.GreaterThan(bestV) || v.Equal(bestV) && t > best {
			best, bestV = t, v
		}
	}
	return best
}

// newestCreated reads the creation time of every matching tag (from the
// caches in the steady state). A tag deleted since the list was made is
// passed over.
func (s *Scanner) newestCreated(ctx context.Context, c *client, tags []string, filter Filter) (string, error) {
	var (
		mu          sync.Mutex
		best        string
		bestCreated time.Time
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.MaxConcurrent)
	for _, t := range tags {
		if !filter.Matches(t) {
			continue
		}
		g.Go(func() error {
			created, _, err := s.createdOf(gctx, c, c.repo.Tag(t))
			if notFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if best == "" || created.After(bestCreated) || created.Equal(bestCreated) && t > best {
				best, bestCreated = t, created
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	return best, nil
}

func notFound(err error) bool {
	var rerr *RegistryError
	return errors.As(err, &rerr) && rerr.StatusCode == http.StatusNotFound
}
