package inputs

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Filter selects the tags of an OCIArtifactTag provider (spec.filter).
type Filter struct {
	// SemVer is a range the tags must match; tags that are not versions are then left out.
	SemVer string
	// IncludeTag and ExcludeTag are Go regular expressions the tags must and must not match.
	IncludeTag, ExcludeTag string
	// Limit is the number of tags kept after sorting, rsv1.DefaultInputLimit when not positive.
	Limit int
}

// OCIPrefix starts the URL of an OCIArtifactTag provider.
const OCIPrefix = "oci://"

// digestConcurrency bounds the manifest requests in flight to one registry: enough to hide
// latency, few enough not to trip a registry's rate limit.
const digestConcurrency = 4

// OCIArtifactTags exports one input per selected tag of the repository at url
// ("oci://host/repo"): `id` (a short hash of the tag), `tag` and `digest` (the manifest's
// "sha256:..."). Tags are filtered by IncludeTag and ExcludeTag, then, with SemVer, the tags
// that are versions in the range are kept and sorted highest first (equal versions by tag);
// without SemVer the tags are sorted in descending byte order, which puts date- or
// counter-stamped tags of equal width newest first. Limit applies after sorting.
//
// insecure allows a registry without TLS; opts carry the credentials and the transport. A filter
// that does not parse is an *InvalidFilterError, a URL that is not a repository an
// *InvalidURLError.
func OCIArtifactTags(ctx context.Context, url string, filter Filter, insecure bool, opts ...remote.Option) ([]map[string]any, error) {
	repo, err := parseRepository(url, insecure)
	if err != nil {
		return nil, err
	}
	sel, err := compileFilter(filter)
	if err != nil {
		return nil, err
	}

	// One puller for the listing and the manifests: it authenticates once per repository.
	puller, err := remote.NewPuller(append(slices.Clone(opts), remote.WithContext(ctx))...)
	if err != nil {
		return nil, err
	}
	tags, err := puller.List(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
	}
	tags = sel.apply(tags)

	digests, err := resolveDigests(ctx, puller, repo, tags)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(tags))
	for i, tag := range tags {
		out[i] = map[string]any{
			IDKey:    ID(tag),
			"tag":    tag,
			"digest": digests[i],
		}
	}
	return out, nil
}

// parseRepository turns "oci://host/repo" into a repository reference.
func parseRepository(url string, insecure bool) (name.Repository, error) {
	if !strings.HasPrefix(url, OCIPrefix) {
		return name.Repository{}, &InvalidURLError{URL: url, Reason: "it must start with " + OCIPrefix}
	}
	var nameOpts []name.Option
	if insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	// StrictValidation: the host must be explicit, so "oci://team/app" fails instead of silently
	// meaning Docker Hub.
	nameOpts = append(nameOpts, name.StrictValidation)
	repo, err := name.NewRepository(strings.TrimPrefix(url, OCIPrefix), nameOpts...)
	if err != nil {
		return name.Repository{}, &InvalidURLError{URL: url, Reason: err.Error()}
	}
	return repo, nil
}

// SelectTags filters, sorts and limits tags as OCIArtifactTags does: the forge providers' tags
// are chosen by the same rules as a registry's.
func SelectTags(tags []string, f Filter) ([]string, error) {
	sel, err := compileFilter(f)
	if err != nil {
		return nil, err
	}
	return sel.apply(tags), nil
}

// tagSelector is a compiled Filter.
type tagSelector struct {
	include, exclude *regexp.Regexp
	semver           *semver.Constraints
	limit            int
}

func compileFilter(f Filter) (*tagSelector, error) {
	s := &tagSelector{limit: f.Limit}
	if s.limit <= 0 {
		s.limit = rsv1.DefaultInputLimit
	}
	var err error
	if f.IncludeTag != "" {
		if s.include, err = regexp.Compile(f.IncludeTag); err != nil {
			return nil, &InvalidFilterError{Field: "includeTag", Value: f.IncludeTag, Err: err}
		}
	}
	if f.ExcludeTag != "" {
		if s.exclude, err = regexp.Compile(f.ExcludeTag); err != nil {
			return nil, &InvalidFilterError{Field: "excludeTag", Value: f.ExcludeTag, Err: err}
		}
	}
	if f.SemVer != "" {
		if s.semver, err = semver.NewConstraint(f.SemVer); err != nil {
			return nil, &InvalidFilterError{Field: "semver", Value: f.SemVer, Err: err}
		}
	}
	return s, nil
}

// apply filters, sorts and limits the tags.
func (s *tagSelector) apply(tags []string) []string {
	kept := make([]string, 0, len(tags))
	for _, t := range tags {
		if s.include != nil && !s.include.MatchString(t) {
			continue
		}
		if s.exclude != nil && s.exclude.MatchString(t) {
			continue
		}
		kept = append(kept, t)
	}

	if s.semver == nil {
		slices.SortFunc(kept, func(a, b string) int { return strings.Compare(b, a) })
	} else {
		type version struct {
			tag string
			v   *semver.Version
		}
		versions := make([]version, 0, len(kept))
		for _, t := range kept {
			// NewVersion accepts a leading "v" (v2.0.0) as well as 2.0.0.
			v, err := semver.NewVersion(t)
			if err != nil || !s.semver.Check(v) {
				continue
			}
			versions = append(versions, version{t, v})
		}
		slices.SortFunc(versions, func(a, b version) int {
			if c := b.v.Compare(a.v); c != 0 {
				return c
			}
			return strings.Compare(b.tag, a.tag)
		})
		kept = kept[:0]
		for _, v := range versions {
			kept = append(kept, v.tag)
		}
	}

	if len(kept) > s.limit {
		kept = kept[:s.limit]
	}
	return kept
}

// resolveDigests returns the manifest digest of every tag, asking the registry for a few at a
// time. The first failure cancels the others.
func resolveDigests(ctx context.Context, puller *remote.Puller, repo name.Repository, tags []string) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	digests := make([]string, len(tags))
	errs := make([]error, len(tags))
	sem := make(chan struct{}, digestConcurrency)
	var wg sync.WaitGroup
	for i, tag := range tags {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			d, err := digestOf(ctx, puller, repo.Tag(tag))
			if err != nil {
				errs[i] = fmt.Errorf("resolving %s: %w", repo.Tag(tag), err)
				cancel()
				return
			}
			digests[i] = d
		})
	}
	wg.Wait()
	// Report the failure that caused the cancellation, not the cancellations it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return digests, nil
}

// digestOf asks for the manifest's digest with HEAD, and falls back to GET for the registries
// that do not answer HEAD for manifests.
func digestOf(ctx context.Context, puller *remote.Puller, ref name.Tag) (string, error) {
	desc, err := puller.Head(ctx, ref)
	if err == nil {
		return desc.Digest.String(), nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	full, getErr := puller.Get(ctx, ref)
	if getErr != nil {
		return "", getErr
	}
	return full.Digest.String(), nil
}
