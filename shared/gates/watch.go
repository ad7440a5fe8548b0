package gates

import (
	"context"

	"github.com/fluxcd/pkg/runtime/conditions"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// NewGate returns an empty unstructured Gate, the watch source for consumers.
func NewGate() *unstructured.Unstructured {
	gate := &unstructured.Unstructured{}
	gate.SetGroupVersionKind(gatesapi.GateGVK)
	return gate
}

// EnqueueConsumers maps a Gate event to a request for every object, in any namespace, whose
// gates refer to that Gate. newList returns an empty list of the consumer kind; the consumer kind
// must be indexed with SetupIndex.
func EnqueueConsumers(reader client.Reader, newList func() client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, gate client.Object) []reconcile.Request {
		key := client.ObjectKeyFromObject(gate).String()
		list := newList()
		if err := reader.List(ctx, list, client.MatchingFields{RefsIndexKey: key}); err != nil {
			log.FromContext(ctx).Error(err, "listing the consumers of a gate", "gate", key)
			return nil
		}
		var reqs []reconcile.Request
		_ = apimeta.EachListItem(list, func(item runtime.Object) error {
			if o, ok := item.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
			return nil
		})
		return reqs
	})
}

// OpenedChanged lets through Gate creations and deletions and the updates that change whether
// the gate is opened, for which revision (status.openedForRevision), or when it next opens: the
// events that can release or block a consumer.
func OpenedChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return openedState(e.ObjectOld) != openedState(e.ObjectNew)
		},
	}
}

func openedState(obj client.Object) [3]string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return [3]string{}
	}
	var status string
	if c := conditions.Get(conditions.UnstructuredGetter(u), gatesapi.OpenedCondition); c != nil {
		status = string(c.Status)
	}
	next, _, _ := unstructured.NestedString(u.Object, "status", gatesapi.NextTransitionField)
	revision, _, _ := unstructured.NestedString(u.Object, "status", gatesapi.OpenedForRevisionField)
	return [3]string{status, next, revision}
}

// Watch adds to a consumer's controller a watch on Gates that enqueues the consumers of a gate
// when it opens, closes, appears or goes away. newList returns an empty list of the consumer kind.
func Watch(b *builder.Builder, reader client.Reader, newList func() client.ObjectList) *builder.Builder {
	return b.Watches(NewGate(), EnqueueConsumers(reader, newList), builder.WithPredicates(OpenedChanged()))
}
