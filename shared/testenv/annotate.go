package testenv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Annotate merges annotations into an object with a merge patch, as `kubectl annotate
// --overwrite` does (no conflict with a controller writing the object); an empty value removes
// the annotation. kv alternates keys and values.
func Annotate(t testing.TB, c client.Client, obj client.Object, kv ...string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(ann, kv[i])
		} else {
			ann[kv[i]] = kv[i+1]
		}
	}
	obj.SetAnnotations(ann)
	if err := c.Patch(ctx, obj, patch); err != nil {
		t.Fatalf("annotating %s: %v", obj.GetName(), err)
	}
}

var pokes atomic.Int64

// Poke asks for a reconcile now with a new reconcile.fluxcd.io/requestedAt value, as `flux
// reconcile` does, and returns the value (echoed in status.lastHandledReconcileAt).
func Poke(t testing.TB, c client.Client, obj client.Object) string {
	t.Helper()
	v := fmt.Sprintf("poke-%d", pokes.Add(1))
	Annotate(t, c, obj, "reconcile.fluxcd.io/requestedAt", v)
	return v
}
