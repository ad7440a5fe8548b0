package deletionset

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gates"
)

// ApprovalChanged lets through the changes of a Gate's approval (its state, the revision pending,
// the revision approved), which decide the deletion sets waiting on it, and its creation.
func ApprovalChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return approvalOf(e.ObjectOld) != approvalOf(e.ObjectNew) },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

func approvalOf(obj client.Object) [3]string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return [3]string{}
	}
	state, _, _ := unstructured.NestedString(u.Object, "status", "approval", "state")
	pending, _, _ := unstructured.NestedString(u.Object, "status", "approval", "pending", "revision")
	approved, _, _ := unstructured.NestedString(u.Object, "status", "approval", "approvedRevision")
	return [3]string{state, pending, approved}
}

// IndexKey is the field index of the objects by the gate of their spec.deletionApproval
// ("<namespace>/<name>").
const IndexKey = "spec.deletionApproval.gate"

// SetupIndex registers IndexKey for objects of obj's kind; gate returns the name of an object's
// deletion gate, "" for none.
func SetupIndex(ctx context.Context, indexer client.FieldIndexer, obj client.Object, gate func(client.Object) string) error {
	return indexer.IndexField(ctx, obj, IndexKey, func(o client.Object) []string {
		if name := gate(o); name != "" {
			return []string{o.GetNamespace() + "/" + name}
		}
		return nil
	})
}

// Watch adds to a controller a watch on Gates that enqueues the objects whose deletions a gate's
// approvers decide, when its approval changes. newList returns an empty list of the kind.
func Watch(b *builder.Builder, reader client.Reader, newList func() client.ObjectList) *builder.Builder {
	return b.Watches(gates.NewGate(), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, gate client.Object) []reconcile.Request {
		list := newList()
		if err := reader.List(ctx, list, client.MatchingFields{IndexKey: gate.GetNamespace() + "/" + gate.GetName()}); err != nil {
			return nil
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(items))
		for _, item := range items {
			if o, ok := item.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return reqs
	}), builder.WithPredicates(ApprovalChanged()))
}
