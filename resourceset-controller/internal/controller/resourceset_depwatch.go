package controller

import (
	"context"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// dependsOnObjectIndex indexes ResourceSets by every object of their spec.dependsOn, as
// "<apiVersion>/<kind>/<namespace>/<name>". A dependency without a namespace is indexed with
// the ResourceSet's and with none, as it may be of a cluster-scoped kind.
const dependsOnObjectIndex = "spec.dependsOn.object"

func dependsOnKeys(o client.Object) []string {
	var keys []string
	for _, d := range o.(*rsv1.ResourceSet).Spec.DependsOn {
		if d.Namespace != "" {
			keys = append(keys, dependencyKey(d.APIVersion, d.Kind, d.Namespace, d.Name))
			continue
		}
		keys = append(keys, dependencyKey(d.APIVersion, d.Kind, o.GetNamespace(), d.Name), dependencyKey(d.APIVersion, d.Kind, "", d.Name))
	}
	return keys
}

func dependencyKey(apiVersion, kind, namespace, name string) string {
	return apiVersion + "/" + kind + "/" + namespace + "/" + name
}

// dependencyWatches releases the ResourceSets waiting on objects of any kind as soon as such an
// object changes, instead of at the next poll (--requeue-dependency, kept as a fallback). A
// metadata-only watch of a kind (no Secret data is cached) is started the first time a
// ResourceSet depends on that kind, and kept: the kinds watched are those in use.
type dependencyWatches struct {
	ctrl   controller.Controller
	cache  cache.Cache
	mapper apimeta.RESTMapper
	list   func(ctx context.Context, key string) []reconcile.Request

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// ensure starts the watches of the kinds of deps not watched yet. A kind the API server does
// not serve (yet) is tried again at the next reconcile.
func (w *dependencyWatches) ensure(ctx context.Context, deps []rsv1.Dependency) {
	if w == nil || w.ctrl == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range deps {
		gvk := schema.FromAPIVersionAndKind(d.APIVersion, d.Kind)
		if w.watched[gvk] || (d.Kind == rsv1.ResourceSetKind && d.APIVersion == rsv1.GroupVersion.String()) {
			continue
		}
		// A watch of a kind not served would retry in the background, logging, forever: it
		// waits until the kind exists (the mapper discovers new CRDs).
		if _, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			log.FromContext(ctx).V(1).Info("the kind of a dependency is not served yet; it is polled", "kind", gvk.String())
			continue
		}
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		apiVersion, kind := d.APIVersion, d.Kind
		mapFn := func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
			return w.list(ctx, dependencyKey(apiVersion, kind, o.GetNamespace(), o.GetName()))
		}
		src := source.Kind(w.cache, obj, handler.TypedEnqueueRequestsFromMapFunc(mapFn))
		if err := w.ctrl.Watch(src); err != nil {
			log.FromContext(ctx).V(1).Info("cannot watch the kind of a dependency yet; it is polled", "kind", gvk.String(), "error", err.Error())
			continue
		}
		if w.watched == nil {
			w.watched = map[schema.GroupVersionKind]bool{}
		}
		w.watched[gvk] = true
	}
}
