package artifact

import (
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// RevisionChanged is the predicate of a watch on sources by their consumers: it lets through
// what can change the artifact a consumer reads. An update passes when the artifact's revision
// changed, a creation when the source comes with an artifact (restored, or seen for the first
// time), a deletion always (the consumer must say its source is gone). Sources are typed objects
// with GetArtifact (the source-controller's own) or unstructured (any other consumer).
func RevisionChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return Revision(e.Object) != "" },
		UpdateFunc:  func(e event.UpdateEvent) bool { return Revision(e.ObjectOld) != Revision(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// Revision is the revision of a source's artifact, "" when it has none.
func Revision(obj client.Object) string {
	switch o := obj.(type) {
	case interface{ GetArtifact() *meta.Artifact }:
		if a := o.GetArtifact(); a != nil {
			return a.Revision
		}
	case *unstructured.Unstructured:
		if a, err := FromObject(o); err == nil && a != nil {
			return a.Revision
		}
	}
	return ""
}
