// Package eventmeta names the metadata of events as Flux's controllers name it: the revision under
// "<API group of the object>/revision", which Flux's notification-controller (and the
// gating-controller's event receiver) read back as the event's revision, for commit statuses and
// for telling two events of different revisions apart.
package eventmeta

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// revisionKey is fluxcd/pkg/apis/event's MetaRevisionKey.
const revisionKey = "revision"

// Revision is the metadata of an event of an object of the API group about revision.
func Revision(group, revision string) map[string]string {
	return map[string]string{group + "/" + revisionKey: revision}
}

// RevisionOf is Revision for obj, whose group the scheme knows; an object of no known group
// gets the key without a group.
func RevisionOf(scheme *runtime.Scheme, obj runtime.Object, revision string) map[string]string {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return map[string]string{revisionKey: revision}
	}
	return Revision(gvk.Group, revision)
}
