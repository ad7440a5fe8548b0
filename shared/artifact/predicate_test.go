package artifact

import (
	"testing"

	meta "github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// typedSource stands for a source-controller type: it has GetArtifact.
type typedSource struct {
	unstructured.Unstructured
	art *meta.Artifact
}

func (s *typedSource) GetArtifact() *meta.Artifact { return s.art }

func withRevision(rev string) *unstructured.Unstructured {
	if rev == "" {
		return source(map[string]any{"observedGeneration": int64(1)})
	}
	return source(map[string]any{"artifact": map[string]any{"revision": rev, "url": "http://x", "size": int64(1)}})
}

// The one predicate of consumers' watches on sources, the same for every controller.
func TestRevisionChanged(t *testing.T) {
	p := RevisionChanged()
	typed := func(rev string) client.Object {
		s := &typedSource{}
		if rev != "" {
			s.art = &meta.Artifact{Revision: rev}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"update to a new revision", p.Update(event.UpdateEvent{ObjectOld: withRevision("a"), ObjectNew: withRevision("b")}), true},
		{"update, same revision", p.Update(event.UpdateEvent{ObjectOld: withRevision("a"), ObjectNew: withRevision("a")}), false},
		{"first artifact", p.Update(event.UpdateEvent{ObjectOld: withRevision(""), ObjectNew: withRevision("a")}), true},
		{"typed, new revision", p.Update(event.UpdateEvent{ObjectOld: typed("a"), ObjectNew: typed("b")}), true},
		{"typed, same revision", p.Update(event.UpdateEvent{ObjectOld: typed("a"), ObjectNew: typed("a")}), false},
		{"created with an artifact", p.Create(event.CreateEvent{Object: withRevision("a")}), true},
		{"created without one", p.Create(event.CreateEvent{Object: withRevision("")}), false},
		{"deleted", p.Delete(event.DeleteEvent{Object: withRevision("a")}), true},
		{"generic", p.Generic(event.GenericEvent{Object: withRevision("a")}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(tc.got).To(Equal(tc.want))
		})
	}
}
