package fluxsyncs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// approvedMessage is the message of Approved=True.
const approvedMessage = "Reconciliation is approved: its gates are opened."

// setApproved writes the RFC's Approved condition among Flux's own conditions. Flux's
// controllers patch only the conditions they own, so it stays; the write is guarded by the
// resourceVersion (conditions are an atomic list) and retried on a conflict with Flux's writes.
func (r *Reconciler) setApproved(ctx context.Context, obj *unstructured.Unstructured, status metav1.ConditionStatus, reason, message string) error {
	return r.patchConditions(ctx, obj, func(conds *[]metav1.Condition) bool {
		if c := apimeta.FindStatusCondition(*conds, gatesapi.ApprovedCondition); c != nil &&
			c.Status == status && c.Reason == reason && c.Message == message {
			return false
		}
		apimeta.SetStatusCondition(conds, metav1.Condition{
			Type: gatesapi.ApprovedCondition, Status: status, Reason: reason, Message: message,
			ObservedGeneration: obj.GetGeneration(),
		})
		return true
	})
}

// removeApproved removes the Approved condition of an object that is no longer bound to gates.
func (r *Reconciler) removeApproved(ctx context.Context, obj *unstructured.Unstructured) error {
	return r.patchConditions(ctx, obj, func(conds *[]metav1.Condition) bool {
		return apimeta.RemoveStatusCondition(conds, gatesapi.ApprovedCondition)
	})
}

// patchConditions applies change to the conditions of obj and writes them when it says they
// changed; on a conflict it reads the object again and retries. obj ends up as written.
func (r *Reconciler) patchConditions(ctx context.Context, obj *unstructured.Unstructured, change func(*[]metav1.Condition) bool) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			fresh, err := r.get(ctx, client.ObjectKeyFromObject(obj))
			if err != nil {
				return err
			}
			fresh.DeepCopyInto(obj)
		}
		first = false
		conds, err := conditionsOf(obj)
		if err != nil {
			return err
		}
		if !change(&conds) {
			return nil
		}
		before := obj.DeepCopy()
		raw := make([]any, 0, len(conds))
		for i := range conds {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
			if err != nil {
				return err
			}
			raw = append(raw, u)
		}
		if err := unstructured.SetNestedSlice(obj.Object, raw, "status", "conditions"); err != nil {
			return err
		}
		err = r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(FieldOwner))
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

func conditionsOf(obj *unstructured.Unstructured) ([]metav1.Condition, error) {
	raw, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		return nil, err
	}
	conds := make([]metav1.Condition, 0, len(raw)+1)
	for _, item := range raw {
		// A condition that does not read as one is not rewritten: the write would lose it.
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("status.conditions of %s holds %T, not a condition", obj.GetName(), item)
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			return nil, fmt.Errorf("reading status.conditions of %s: %w", obj.GetName(), err)
		}
		conds = append(conds, c)
	}
	return conds, nil
}
