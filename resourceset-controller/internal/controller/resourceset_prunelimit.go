package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/owner"
)

// pruneLimit says why the build of revision must not be applied (empty when it may): it would
// delete more of the inventory than spec.maxPrune allows, and the allow-prune annotation does not
// name revision. One mistaken change (an input removed, a template broken into nothing) then
// costs a condition rather than a fleet.
//
// allowed says that the build prunes more than the limit and the annotation lets it through:
// the annotation is then used up (removed once the prune is done), so that it lets exactly one
// prune through.
//
// inventory is the whole inventory (read from its ConfigMaps when it outgrew the status).
// defaultLimit is --max-prune, for a ResourceSet without spec.maxPrune.
func pruneLimit(obj *rsv1.ResourceSet, defaultLimit *intstr.IntOrString, inventory []apply.Entry, objects []*unstructured.Unstructured,
	revision string) (msg string, allowed bool, err error) {
	msg, _, err = owner.PruneLimit(obj.Spec.MaxPrune, defaultLimit, revision, obj.Namespace, inventory, objects)
	if msg == "" || err != nil {
		return "", false, err
	}
	if obj.GetAnnotations()[rsv1.AllowPruneAnnotation] == revision {
		return "", true, nil
	}
	return fmt.Sprintf("%s: nothing is applied or pruned; raise spec.maxPrune, or annotate the ResourceSet with %s=%s to let this one prune through",
		msg, rsv1.AllowPruneAnnotation, revision), false, nil
}

// useAllowPrune removes the allow-prune annotation once the prune it let through is done.
func (r *ResourceSetReconciler) useAllowPrune(ctx context.Context, obj *rsv1.ResourceSet) {
	patch := []byte(`{"metadata":{"annotations":{"` + rsv1.AllowPruneAnnotation + `":null}}}`)
	target := &rsv1.ResourceSet{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name}}
	if err := r.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		log.FromContext(ctx).Error(err, "removing the used annotation "+rsv1.AllowPruneAnnotation)
	}
}

// deletedOf is the entries of the inventory the objects do not keep: what applying them deletes.
func deletedOf(obj *rsv1.ResourceSet, inventory []apply.Entry, objects []*unstructured.Unstructured) []string {
	return owner.Deleted(obj.Namespace, inventory, objects)
}
