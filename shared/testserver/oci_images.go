package testserver

import (
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushImage pushes a small random container image, created at created (its config's
// `created`, what tools sort images by), as repo:tag, and returns its digest.
func (r *Registry) PushImage(t testing.TB, repo, tag string, created time.Time) v1.Hash {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(r.fullRef(repo + ":" + tag))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, r.remoteOptions()...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
