package fluxsyncs

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// hold suspends the object, unless its user already did, and records by whom and since when.
// The write is guarded by the resourceVersion read, so a suspend set meanwhile by someone else
// is never taken for ours.
func (r *Reconciler) hold(ctx context.Context, key client.ObjectKey, v verdict) error {
	obj, err := r.get(ctx, key)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	before := obj.DeepCopy()
	annotations := copyMap(obj.GetAnnotations())
	_, wasHeld := annotations[gatesapi.HeldSinceAnnotation]
	if v.invalid != nil && annotations[gatesapi.HeldByAnnotation] != gatesapi.InvalidGatesHolder {
		// Once per malformed value, not at each reconcile that finds it still malformed.
		r.EventRecorder.Eventf(obj, "Warning", InvalidGatesReason, "%s; reconciliation is held until it is fixed or removed", v.invalid)
	}
	if !wasHeld {
		annotations[gatesapi.HeldSinceAnnotation] = r.Clock.Now().UTC().Format(time.RFC3339)
	}
	annotations[gatesapi.HeldByAnnotation] = v.heldBy
	if rev := r.waitingRevision(ctx, obj); rev != "" {
		annotations[gatesapi.WaitingRevisionAnnotation] = rev
	} else {
		delete(annotations, gatesapi.WaitingRevisionAnnotation)
	}
	userSuspended := false
	if suspended, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); !suspended {
		if err := unstructured.SetNestedField(obj.Object, true, "spec", "suspend"); err != nil {
			return err
		}
		annotations[gatesapi.SuspendedAnnotation] = "true"
	} else if annotations[gatesapi.SuspendedAnnotation] != "true" {
		userSuspended = true
	}
	obj.SetAnnotations(annotations)
	if !equality.Semantic.DeepEqual(before.Object, obj.Object) {
		patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if err := r.Client.Patch(ctx, obj, patch, client.FieldOwner(FieldOwner)); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if !wasHeld {
		note := " Flux's spec.suspend is set until they open."
		if userSuspended {
			note = " It is suspended by its user, which the gates leave as it is."
		}
		r.EventRecorder.Event(obj, "Normal", gatesapi.HeldReason, v.message+note)
	}
	return r.setApproved(ctx, obj, metav1.ConditionFalse, gatesapi.GateClosedReason, v.message)
}

// release undoes what hold (or the admission policy) did and asks Flux for a reconcile at once.
// It is a JSON patch whose tests make it apply only to the hold it read: a suspend is removed
// only under gatesapi.SuspendedAnnotation. With unbound set, the object lost its annotation and
// its Approved condition goes too.
func (r *Reconciler) release(ctx context.Context, key client.ObjectKey, unbound bool) error {
	obj, err := r.get(ctx, key)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if unbound {
		if err := r.removeApproved(ctx, obj); err != nil {
			return err
		}
	} else if err := r.setApproved(ctx, obj, metav1.ConditionTrue, gatesapi.GateOpenedReason, approvedMessage); err != nil {
		return err
	}
	annotations := obj.GetAnnotations()
	since, held := annotations[gatesapi.HeldSinceAnnotation]
	suspendedForGates := annotations[gatesapi.SuspendedAnnotation] == "true"
	if !held && !suspendedForGates {
		return nil
	}
	var ops []patchOp
	for _, k := range []string{gatesapi.HeldSinceAnnotation, gatesapi.SuspendedAnnotation} {
		if v, ok := annotations[k]; ok {
			ops = append(ops, patchOp{Op: "test", Path: annotationPath(k), Value: v})
		}
	}
	for _, k := range []string{gatesapi.HeldSinceAnnotation, gatesapi.HeldByAnnotation, gatesapi.WaitingRevisionAnnotation, gatesapi.SuspendedAnnotation} {
		if _, ok := annotations[k]; ok {
			ops = append(ops, patchOp{Op: "remove", Path: annotationPath(k)})
		}
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "suspend"); found && suspendedForGates {
		ops = append(ops, patchOp{Op: "remove", Path: "/spec/suspend"})
	}
	ops = append(ops, patchOp{Op: "add", Path: annotationPath(meta.ReconcileRequestAnnotation), Value: r.Clock.Now().UTC().Format(time.RFC3339Nano)})
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data), client.FieldOwner(FieldOwner)); err != nil {
		// A failed test means the object changed since it was read: the retry reads it again.
		return client.IgnoreNotFound(err)
	}
	if held {
		what := "released by its gates"
		if unbound {
			what = "released: its " + gatesapi.GatesAnnotation + " annotation was removed"
		}
		if t, err := time.Parse(time.RFC3339, since); err == nil {
			what += " after waiting " + r.Clock.Since(t).Round(time.Second).String()
		}
		r.EventRecorder.Event(obj, "Normal", gatesapi.ReleasedReason, what)
	}
	return nil
}

// patchOp is one operation of an RFC 6902 JSON patch.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// annotationPath is the JSON pointer (RFC 6901) of an annotation.
func annotationPath(key string) string {
	return "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+4)
	for k, v := range m {
		out[k] = v
	}
	return out
}
