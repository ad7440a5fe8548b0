package artifact

import (
	"testing"
	"time"

	meta "github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func source(status any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1",
		"kind":       "GitRepository",
		"metadata":   map[string]any{"name": "podinfo", "namespace": "flux-system"},
	}}
	if status != nil {
		obj.Object["status"] = status
	}
	return obj
}

func TestFromObjectReadsStatusArtifact(t *testing.T) {
	g := NewWithT(t)
	obj := source(map[string]any{
		"observedGeneration": int64(3),
		"artifact": map[string]any{
			"url":            "http://source-controller.flux-system.svc/gitrepository/flux-system/podinfo/abc.tar.gz",
			"revision":       "main@sha1:abc123",
			"digest":         "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			"path":           "gitrepository/flux-system/podinfo/abc.tar.gz",
			"lastUpdateTime": "2025-05-01T10:00:00Z",
			"size":           int64(1234),
			"metadata":       map[string]any{"org.opencontainers.image.source": "git"},
		},
	})

	art, err := FromObject(obj)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(art).NotTo(BeNil())
	g.Expect(art.LastUpdateTime.Time).To(BeTemporally("==", time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)))
	art.LastUpdateTime = metav1.Time{} // parsed in the local zone; compared above
	size := int64(1234)
	g.Expect(art).To(Equal(&meta.Artifact{
		URL:      "http://source-controller.flux-system.svc/gitrepository/flux-system/podinfo/abc.tar.gz",
		Revision: "main@sha1:abc123",
		Digest:   "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Path:     "gitrepository/flux-system/podinfo/abc.tar.gz",
		Size:     &size,
		Metadata: map[string]string{"org.opencontainers.image.source": "git"},
	}))
}

func TestFromObjectWithoutArtifact(t *testing.T) {
	for name, status := range map[string]any{
		"no status":          nil,
		"status without one": map[string]any{"observedGeneration": int64(1)},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			art, err := FromObject(source(status))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(art).To(BeNil())
		})
	}
}

func TestFromObjectRefusesAMalformedArtifact(t *testing.T) {
	for name, status := range map[string]any{
		"artifact is a string": map[string]any{"artifact": "http://example.com/a.tar.gz"},
		"artifact is a list":   map[string]any{"artifact": []any{"a"}},
		"status is a string":   "ready",
		"size is a string":     map[string]any{"artifact": map[string]any{"url": "u", "size": "big"}},
		"url is a map":         map[string]any{"artifact": map[string]any{"url": map[string]any{}}},
		"bad lastUpdateTime":   map[string]any{"artifact": map[string]any{"url": "u", "lastUpdateTime": "yesterday"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			art, err := FromObject(source(status))
			g.Expect(err).To(MatchError(ContainSubstring("GitRepository 'flux-system/podinfo'")))
			g.Expect(err).To(MatchError(ContainSubstring("status.artifact is malformed")))
			g.Expect(art).To(BeNil())
		})
	}
}
