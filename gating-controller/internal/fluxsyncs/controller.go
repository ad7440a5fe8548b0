package fluxsyncs

import (
	"context"
	"maps"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/sharding"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// gatesIndexKey indexes the objects of a kind by the gates their annotation names
// (`namespace/name`), so that a Gate that opens or closes finds its objects at once.
const gatesIndexKey = "metadata.annotations.gates"

// indexGates is the client.IndexerFunc behind gatesIndexKey. A malformed annotation names no gate.
func indexGates(obj client.Object) []string {
	value, ok := obj.GetAnnotations()[gatesapi.GatesAnnotation]
	if !ok {
		return nil
	}
	spec, err := gatesapi.ParseGatesAnnotation(value)
	if err != nil {
		return nil
	}
	keys := make([]string, 0, len(spec.Refs))
	for _, ref := range spec.Refs {
		keys = append(keys, gatesapi.ResolveRef(obj.GetNamespace(), ref).String())
	}
	return keys
}

// SetupWithManager watches the kind's metadata only (Flux's specs and statuses are not cached)
// and the Gates the objects name.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, r.newMeta(), gatesIndexKey, indexGates); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(r.Kind.name()).
		For(r.newMeta(), builder.OnlyMetadata, builder.WithPredicates(boundOrHeld())).
		Watches(&gatingv1.Gate{}, handler.EnqueueRequestsFromMapFunc(r.objectsOfGate), builder.WithPredicates(gateOpenedChanged())).
		WithOptions(opts)
	// Flux's objects: they carry no shard label of Sluice's.
	return sharding.Complete(b, r.Shards, mgr.GetClient(), sharding.Kind{NewList: func() client.ObjectList { return r.newMetaList() }}, r)
}

func (r *Reconciler) newMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(r.Kind.GVK)
	return m
}

func (r *Reconciler) newMetaList() *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(r.Kind.GVK.GroupVersion().WithKind(r.Kind.GVK.Kind + "List"))
	return list
}

func (r *Reconciler) objectsOfGate(ctx context.Context, gate client.Object) []reconcile.Request {
	list := r.newMetaList()
	key := client.ObjectKeyFromObject(gate).String()
	if err := r.Client.List(ctx, list, client.MatchingFields{gatesIndexKey: key}); err != nil {
		log.FromContext(ctx).Error(err, "listing the objects behind a gate", "gate", key, "kind", r.Kind.GVK.Kind)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// boundOrHeld lets through the objects that are bound to gates or carry what the gates did (so
// that one whose annotation was removed is released), when their annotations or spec change:
// Flux's status writes, the bulk of the updates, are not the gates' business.
func boundOrHeld() predicate.Predicate {
	concerned := func(o client.Object) bool {
		a := o.GetAnnotations()
		_, bound := a[gatesapi.GatesAnnotation]
		_, held := a[gatesapi.HeldSinceAnnotation]
		_, suspended := a[gatesapi.SuspendedAnnotation]
		return bound || held || suspended
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return concerned(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !concerned(e.ObjectOld) && !concerned(e.ObjectNew) {
				return false
			}
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return concerned(e.Object) },
	}
}

// gateOpenedChanged lets through Gates that appear or go away, and those whose Opened status,
// revision opened for (status.openedForRevision) or next opening changes.
func gateOpenedChanged() predicate.Predicate {
	state := func(o client.Object) [3]string {
		gate, ok := o.(*gatingv1.Gate)
		if !ok {
			return [3]string{}
		}
		var s [3]string
		s[2] = gate.Status.OpenedForRevision
		if c := apimeta.FindStatusCondition(gate.Status.Conditions, gatesapi.OpenedCondition); c != nil {
			s[0] = string(c.Status)
		}
		if t := gate.Status.NextTransitionAt; t != nil {
			s[1] = t.UTC().String()
		}
		return s
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return state(e.ObjectOld) != state(e.ObjectNew) },
	}
}
