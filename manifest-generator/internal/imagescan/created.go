package imagescan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// tagDigest is the digest a tag pointed at when checked.
type tagDigest struct {
	digest  v1.Hash
	checked time.Time
}

// Created returns the creation time of the image ref points at (the
// "created" of its config; for an image index, that of its linux/amd64
// image, or else its first) and the digest of ref's manifest.
//
// Creation times are cached by digest for good: a digest names its content.
// The tag's digest is taken as known for DigestRefresh; after that a HEAD
// checks it (one request), and only a new digest costs its manifest and
// config. A tag never seen costs a GET of its manifest and, unless another
// tag already pointed at that digest, its config.
func (s *Scanner) Created(ctx context.Context, ref name.Tag, opts Options) (time.Time, v1.Hash, error) {
	c, err := s.client(ctx, ref.Repository, opts)
	if err != nil {
		return time.Time{}, v1.Hash{}, err
	}
	return s.createdOf(ctx, c, c.repo.Tag(ref.TagStr()))
}

type createdResult struct {
	created time.Time
	digest  v1.Hash
}

func (s *Scanner) createdOf(ctx context.Context, c *client, tag name.Tag) (time.Time, v1.Hash, error) {
	key := tag.Name() + "\x00" + c.credentials
	if r, ok := s.cachedCreated(key, c); ok {
		return r.created, r.digest, nil
	}
	v, err := s.shared(ctx, "created\x00"+key, func(ctx context.Context) (any, error) {
		if r, ok := s.cachedCreated(key, c); ok {
			return r, nil
		}
		release, err := s.acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		r, err := s.fetchCreated(ctx, c, tag, key)
		if err != nil {
			c.drop()
			return nil, s.rateLimited(c.repo.RegistryStr(), fmt.Errorf("reading image %s: %w", tag, sanitize(err)))
		}
		return r, nil
	})
	if err != nil {
		return time.Time{}, v1.Hash{}, err
	}
	r := v.(createdResult)
	return r.created, r.digest, nil
}

// cachedCreated answers from the caches alone while the tag's digest is
// fresh: checked within DigestRefresh (Interval with FreshDigests) and not
// before the client's NotBefore.
func (s *Scanner) cachedCreated(key string, c *client) (createdResult, bool) {
	refresh := s.cfg.DigestRefresh
	if c.freshDigests {
		refresh = s.cfg.Interval
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.digests[key]
	if !ok || s.cfg.Clock.Now().Sub(d.checked) >= refresh || d.checked.Before(c.notBefore) {
		return createdResult{}, false
	}
	t, ok := s.created[d.digest]
	return createdResult{created: t, digest: d.digest}, ok
}

func (s *Scanner) fetchCreated(ctx context.Context, c *client, tag name.Tag, key string) (createdResult, error) {
	s.mu.Lock()
	old, known := s.digests[key]
	oldCreated, knownCreated := s.created[old.digest]
	s.mu.Unlock()
	remember := func(r createdResult) createdResult {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.digests[key] = tagDigest{digest: r.digest, checked: s.cfg.Clock.Now()}
		s.created[r.digest] = r.created
		return r
	}
	// A known tag: HEAD tells whether it still points where it did.
	if known && knownCreated {
		desc, err := c.puller.Head(ctx, tag)
		if err != nil {
			return createdResult{}, err
		}
		if desc.Digest == old.digest {
			return remember(createdResult{created: oldCreated, digest: old.digest}), nil
		}
	}
	desc, err := c.puller.Get(ctx, tag)
	if err != nil {
		return createdResult{}, err
	}
	s.mu.Lock()
	t, ok := s.created[desc.Digest]
	s.mu.Unlock()
	if !ok {
		if t, err = imageCreated(desc); err != nil {
			return createdResult{}, err
		}
	}
	return remember(createdResult{created: t, digest: desc.Digest}), nil
}

// imageCreated reads the creation time from the image's config, choosing
// the linux/amd64 image of an index (the platform Flux v1 assumed), or its
// first when it has none.
func imageCreated(desc *remote.Descriptor) (time.Time, error) {
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return time.Time{}, err
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return time.Time{}, err
		}
		if len(m.Manifests) == 0 {
			return time.Time{}, errors.New("image index lists no image")
		}
		child := m.Manifests[0]
		for _, d := range m.Manifests {
			if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64" {
				child = d
				break
			}
		}
		if img, err = idx.Image(child.Digest); err != nil {
			return time.Time{}, err
		}
	} else {
		var err error
		if img, err = desc.Image(); err != nil {
			return time.Time{}, err
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return time.Time{}, fmt.Errorf("config: %w", err)
	}
	return cfg.Created.Time, nil
}
