package imagescan

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// tagList is a repository's tags as listed at fetched.
type tagList struct {
	tags    []string
	fetched time.Time
}

// Tags lists the tags of repo. A list younger than Interval, for the same
// credentials, is returned without a request; callers asking for the same
// repository at the same time share one request; the requests of all
// repositories together stay within MaxConcurrent.
func (s *Scanner) Tags(ctx context.Context, repo name.Repository, opts Options) ([]string, error) {
	c, err := s.client(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	tags, err := s.tagsOf(ctx, c)
	return slices.Clone(tags), err
}

// tagsOf is Tags for a resolved client; the slice returned is shared.
func (s *Scanner) tagsOf(ctx context.Context, c *client) ([]string, error) {
	key := c.repo.Name() + "\x00" + c.credentials
	if tags, ok := s.cachedTags(key, c.notBefore); ok {
		return tags, nil
	}
	v, err := s.shared(ctx, "tags\x00"+key, func(ctx context.Context) (any, error) {
		// A request that ended while this one queued has filled the cache.
		if tags, ok := s.cachedTags(key, c.notBefore); ok {
			return tags, nil
		}
		release, err := s.acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		tags, err := c.puller.List(ctx, c.repo)
		if err != nil {
			c.drop()
			return nil, s.rateLimited(c.repo.RegistryStr(), fmt.Errorf("listing tags of %s: %w", c.repo, sanitize(err)))
		}
		s.mu.Lock()
		s.tags[key] = tagList{tags: tags, fetched: s.cfg.Clock.Now()}
		s.mu.Unlock()
		return tags, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]string), nil
}

func (s *Scanner) cachedTags(key string, notBefore time.Time) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tags[key]
	if !ok || s.cfg.Clock.Now().Sub(e.fetched) >= s.cfg.Interval || e.fetched.Before(notBefore) {
		return nil, false
	}
	return e.tags, true
}
