package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/impersonation"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// ownerGroup prefixes the labels that tie applied objects to their ResourceSet
// (resourceset.fluxcd.controlplane.io/name and /namespace).
const ownerGroup = "resourceset.fluxcd.controlplane.io"

// clientFor is the client of the ResourceSet's account; an account that does not exist is
// said so (impersonating it would only give "forbidden").
func (r *ResourceSetReconciler) clientFor(ctx context.Context, obj *rsv1.ResourceSet) (impersonation.Client, error) {
	if sa := r.Clients.ServiceAccount(obj.Namespace, obj.Spec.ServiceAccountName); sa != "" {
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: sa}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return impersonation.Client{}, r.failed(obj, rsv1.ReconciliationFailedReason, fmt.Errorf("ServiceAccount '%s/%s' %w", obj.Namespace, sa, errNoAccount))
		}
		if err != nil {
			return impersonation.Client{}, err
		}
	}
	return r.Clients.For(obj.Namespace, obj.Spec.ServiceAccountName)
}

// applier applies as the ResourceSet's account, with the fluxcd.controlplane.io annotations.
func (r *ResourceSetReconciler) applier(cl impersonation.Client) *apply.Applier {
	return &apply.Applier{
		Client: cl, Mapper: r.Clients.Mapper, FieldManager: r.ControllerName, OwnerGroup: ownerGroup,
		Concurrency: r.ApplyConcurrency, Memory: &r.applied,
		Annotations: apply.Annotations{Reconcile: rsv1.ReconcileAnnotation, Force: rsv1.ForceAnnotation, Prune: rsv1.PruneAnnotation},
	}
}

// reconcileObjects applies the objects (CRDs and Namespaces first, the rest concurrently),
// records the inventory, prunes what left it, and runs the health checks of spec.wait.
func (r *ResourceSetReconciler) reconcileObjects(ctx context.Context, obj *rsv1.ResourceSet, objects []*unstructured.Unstructured,
	revision string, start time.Time) error {
	cl, err := r.clientFor(ctx, obj)
	if err != nil {
		return err
	}
	res, err := r.applier(cl).Apply(ctx, apply.Request{
		Owner: client.ObjectKeyFromObject(obj), Revision: revision, Objects: objects,
		Inventory: entries(obj.Status.Inventory), Prune: true, Wait: obj.Spec.Wait, Timeout: obj.GetTimeout(),
		Force: obj.GetAnnotations()[rsv1.ForceAnnotation] == rsv1.EnabledValue,
	})
	if res != nil && res.Inventory != nil {
		obj.Status.Inventory = inventoryOf(res.Inventory)
	}
	r.prunedEvent(obj, res)
	switch {
	case errors.Is(err, apply.ErrHealth):
		obj.Status.LastAppliedRevision = revision
		return r.failed(obj, rsv1.HealthCheckFailedReason, fmt.Errorf("health check failed after %s: %w",
			apply.FmtDuration(time.Since(start)), err))
	case err != nil:
		return r.failed(obj, rsv1.ReconciliationFailedReason, err)
	}
	changed := obj.Status.LastAppliedRevision != revision || len(res.Pruned) > 0
	obj.Status.LastAppliedRevision = revision
	if res.Changes != "" {
		r.EventRecorder.AnnotatedEventf(obj, map[string]string{"revision": revision}, corev1.EventTypeNormal, rsv1.ApplySucceededReason, "%s", res.Changes)
		changed = true
	}
	msg := fmt.Sprintf("Reconciliation finished in %s", apply.FmtDuration(time.Since(start)))
	if c := conditions.Get(obj, meta.ReadyCondition); changed || c == nil || c.Status != metav1.ConditionTrue {
		r.EventRecorder.AnnotatedEventf(obj, map[string]string{"revision": revision}, corev1.EventTypeNormal, rsv1.ReconciliationSucceededReason, "%s", msg)
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, rsv1.ReconciliationSucceededReason, "%s", msg)
	return nil
}
