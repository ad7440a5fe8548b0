package fluxsyncs

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
)

// sourceAPIVersion is the API version of the sources a Kustomization applies (Flux's, or
// Sluice's source-controller serving the same API).
var sourceAPIVersion = fluxapi.SourceV1.String()

// waitingRevision is the revision of the object's source that it has not applied: the one its
// gates keep back. It is "" for kinds that cannot tell, and when the source has nothing newer or
// cannot be read (the gates hold the object all the same).
func (r *Reconciler) waitingRevision(ctx context.Context, obj *unstructured.Unstructured) string {
	if !r.Kind.SourceRef {
		return ""
	}
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "sourceRef", "kind")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "sourceRef", "name")
	namespace, _, _ := unstructured.NestedString(obj.Object, "spec", "sourceRef", "namespace")
	if kind == "" || name == "" {
		return ""
	}
	if namespace == "" {
		namespace = obj.GetNamespace()
	}
	source := &unstructured.Unstructured{}
	source.SetAPIVersion(sourceAPIVersion)
	source.SetKind(kind)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, source); err != nil {
		log.FromContext(ctx).V(1).Info("cannot read the source to tell the waiting revision", "error", err.Error())
		return ""
	}
	revision, _, _ := unstructured.NestedString(source.Object, "status", "artifact", "revision")
	applied, _, _ := unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
	if revision == applied {
		return ""
	}
	return revision
}
