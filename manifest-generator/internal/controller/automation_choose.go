package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
)

// maxExamined bounds the tags one container's scan reads the image of (for its age, its digest or
// its signature), from the newest: a repository that publishes faster than that is still moved,
// to the newest of them that qualifies. It is also the bound of status' seen tags.
const maxExamined = generatorv1.MaxTagsSeen

// maxRefused bounds status.automation.images[].refused.
const maxRefused = 8

// plausibleSince: an image config dated before it (reproducible builds write 1970, or nothing)
// says nothing of when the image was made; its tag's age is then when the scan first saw it.
var plausibleSince = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// choice is what one scan decides for one container.
type choice struct {
	// tag is the tag the container should run ("" when no tag qualifies); digest is its
	// digest, read when the container pins digests or verifies signatures.
	tag, digest string
	waiting     *generatorv1.WaitingTag
	refused     []generatorv1.RefusedTag
	seen        []generatorv1.TagSeen
}

// chooser decides, for the containers of one scan, which tag each should run.
type chooser struct {
	r    *ManifestGenerationReconciler
	now  time.Time
	keys *verifyKeys
}

// choose walks the candidates from the newest down to the tag the container runs and takes the
// first that qualifies: old enough (minimum age), and signed (verify). A tag that does not
// qualify never holds back an older one that does. With neither policy nor a pinned digest, the
// newest candidate is taken from the tag list alone, as before.
func (ch *chooser) choose(ctx context.Context, c automatedContainer, repo name.Repository, opts imagescan.Options,
	cands []imagescan.Candidate, minAge time.Duration, prev *generatorv1.AutomatedImage) (choice, error) {
	var out choice
	current, currentDigest := currentTag(c.image), digestOf(c.image)
	if !c.pinned && c.verify == "" && minAge <= 0 {
		out.tag = cands[0].Tag
		return out, nil
	}
	seen := map[string]metav1.Time{}
	if prev != nil {
		for _, s := range prev.Seen {
			seen[s.Tag] = s.Since
		}
	}
	opts.FreshDigests = c.pinned || c.verify != ""
	for i, cand := range cands {
		isCurrent := cand.Tag == current
		if isCurrent && !c.pinned {
			out.tag = current
			return out, nil
		}
		if i == maxExamined {
			break
		}
		created, digest, err := ch.r.Scanner.Created(ctx, repo.Tag(cand.Tag), opts)
		if err != nil {
			var rerr *imagescan.RegistryError
			if errors.As(err, &rerr) && rerr.StatusCode == 404 {
				continue // deleted since the list was made
			}
			return out, err
		}
		if isCurrent && digest.String() == currentDigest {
			out.tag, out.digest = current, currentDigest
			return out, nil
		}
		if minAge > 0 {
			born := created
			if created.Before(plausibleSince) || created.After(ch.now.Add(time.Hour)) {
				since, ok := seen[cand.Tag]
				if !ok {
					since = metav1.Time{Time: ch.now}
				}
				out.seen = append(out.seen, generatorv1.TagSeen{Tag: cand.Tag, Since: since})
				born = since.Time
			}
			if eligible := born.Add(minAge); ch.now.Before(eligible) {
				if out.waiting == nil {
					out.waiting = &generatorv1.WaitingTag{Tag: cand.Tag, EligibleAt: metav1.Time{Time: eligible.UTC().Truncate(time.Second)}}
				}
				continue
			}
		}
		if c.verify != "" {
			ref := repo.Digest(digest.String())
			if err := ch.keys.verify(ctx, ch.r, ref, opts); err != nil {
				var nv *notVerifiedError
				if !errors.As(err, &nv) {
					return out, err
				}
				if len(out.refused) < maxRefused {
					out.refused = append(out.refused, generatorv1.RefusedTag{Tag: cand.Tag, Digest: digest.String(), Reason: nv.reason})
				}
				continue
			}
		}
		out.tag, out.digest = cand.Tag, digest.String()
		return out, nil
	}
	return out, nil
}

// minimumAge is the container's minimum age: its policy, or the automation's.
func minimumAge(c automatedContainer, spec *generatorv1.Automation) (time.Duration, error) {
	if c.minAge == "" {
		return spec.GetMinimumAge(), nil
	}
	d, err := time.ParseDuration(c.minAge)
	if err != nil || d < 0 {
		return 0, &policyError{policy: generatorv1.MinimumAgePolicyPrefix + c.container,
			err: fmt.Errorf("minimum age %q is not a duration such as 24h", c.minAge)}
	}
	return d, nil
}

// digestOf is the digest of an image reference, "" when it has none.
func digestOf(image string) string {
	for i := len(image) - 1; i >= 0; i-- {
		if image[i] == '@' {
			return image[i+1:]
		}
	}
	return ""
}
