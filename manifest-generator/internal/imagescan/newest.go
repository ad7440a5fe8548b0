package imagescan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

// Candidate is a tag a filter accepts.
type Candidate struct {
	Tag string
	// Created is the creation time of the tag's image, read for glob and regex filters (zero
	// for semver filters, which need only the tag list).
	Created time.Time
}

// Newest is the tag of repo a workload with filter should run: the first of
// Candidates.
func (s *Scanner) Newest(ctx context.Context, repo name.Repository, filter Filter, opts Options) (string, error) {
	cands, err := s.Candidates(ctx, repo, filter, opts)
	if err != nil {
		return "", err
	}
	return cands[0].Tag, nil
}

// Candidates are the tags of repo that filter accepts, the one a workload
// should run first: for a semver filter the versions from the highest, from
// the tag list alone; for glob and regex filters the tags from the most
// recently created image. Ties go to the lexically greatest tag, so that
// the order does not depend on the registry's. None is a NoMatchError.
func (s *Scanner) Candidates(ctx context.Context, repo name.Repository, filter Filter, opts Options) ([]Candidate, error) {
	c, err := s.client(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	tags, err := s.tagsOf(ctx, c)
	if err != nil {
		return nil, err
	}
	var cands []Candidate
	if filter.Kind() == KindSemver {
		cands = byVersion(tags, filter)
	} else if cands, err = s.byCreated(ctx, c, tags, filter); err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, &NoMatchError{Repository: c.repo.Name(), Filter: filter}
	}
	return cands, nil
}

func byVersion(tags []string, filter Filter) []Candidate {
	type version struct {
		tag string
		v   *semver.Version
	}
	var vs []version
	for _, t := range tags {
		if v, ok := filter.version(t); ok {
			vs = append(vs, version{t, v})
		}
	}
	slices.SortFunc(vs, func(a, b version) int {
		if c := b.v.Compare(a.v); c != 0 {
			return c
		}
		return strings.Compare(b.tag, a.tag)
	})
	out := make([]Candidate, len(vs))
	for i, v := range vs {
		out[i] = Candidate{Tag: v.tag}
	}
	return out
}

// byCreated reads the creation time of every matching tag (from the caches
// in the steady state). A tag deleted since the list was made is passed
// over.
func (s *Scanner) byCreated(ctx context.Context, c *client, tags []string, filter Filter) ([]Candidate, error) {
	var (
		mu  sync.Mutex
		out []Candidate
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
			out = append(out, Candidate{Tag: t, Created: created})
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Candidate) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.Tag, a.Tag)
	})
	return out, nil
}

func notFound(err error) bool {
	var rerr *RegistryError
	return errors.As(err, &rerr) && rerr.StatusCode == http.StatusNotFound
}
