package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

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

// resourceManager is fluxcd/pkg/ssa's resource manager acting as the ResourceSet's account.
func (r *ResourceSetReconciler) resourceManager(cl impersonation.Client) *ssa.ResourceManager {
	rm := ssa.NewResourceManager(cl, cl.Poller, ssa.Owner{Field: r.ControllerName, Group: ownerGroup})
	if r.ApplyConcurrency > 0 {
		rm.SetConcurrency(r.ApplyConcurrency)
	}
	return rm
}

// reconcileObjects applies the objects (CRDs and Namespaces first, the rest concurrently),
// records the inventory, prunes what left it, and runs the health checks of spec.wait.
func (r *ResourceSetReconciler) reconcileObjects(ctx context.Context, obj *rsv1.ResourceSet, objects []*unstructured.Unstructured,
	revision string, start time.Time) error {
	cl, err := r.clientFor(ctx, obj)
	if err != nil {
		return err
	}
	rm := r.resourceManager(cl)
	r.defaultNamespaces(objects, obj.Namespace)
	rm.SetOwnerLabels(objects, obj.Name, obj.Namespace)
	key := client.ObjectKeyFromObject(obj)
	owner := rm.GetOwnerLabels(obj.Name, obj.Namespace)
	opts := ssa.DefaultApplyOptions()
	// force: enabled on the ResourceSet recreates any object with an immutable change; on a
	// generated object, that object only.
	opts.Force = obj.GetAnnotations()[rsv1.ForceAnnotation] == rsv1.EnabledValue
	opts.ForceSelector = map[string]string{rsv1.ForceAnnotation: rsv1.EnabledValue}
	opts.WaitTimeout = obj.GetTimeout()
	// An object annotated in the cluster with reconcile: disabled is left as it is.
	opts.ExclusionSelector = map[string]string{rsv1.ReconcileAnnotation: rsv1.DisabledValue}
	// Fields set by kubectl before the object was generated would otherwise keep their values.
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations: []string{corev1.LastAppliedConfigAnnotation},
		FieldManagers: []ssa.FieldManager{
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationApply},
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "before-first-apply", OperationType: metav1.ManagedFieldsOperationUpdate},
		},
		Exclusions: map[string]string{rsv1.ReconcileAnnotation: rsv1.DisabledValue},
	}
	// Objects unchanged on both sides since the last apply skip the dry-run.
	state := r.applied.get(key)
	var live map[string]string
	if state != nil {
		if live, err = liveVersions(ctx, cl, objects, owner); err != nil {
			log.FromContext(ctx).V(1).Info("listing the applied objects failed, dry-running them all", "error", err.Error())
			live = nil
		}
	}
	unchanged, toApply := unchangedSince(state, live, objects)
	cs := ssa.NewChangeSet()
	if len(toApply) > 0 {
		applied, err := rm.ApplyAllStaged(ctx, toApply, opts)
		cs.Append(applied.Entries)
		if err != nil {
			r.applied.delete(key)
			// What was applied before the failure joins the inventory, so it is never orphaned.
			obj.Status.Inventory = mergeInventory(obj.Status.Inventory, newInventory(cs))
			return r.failed(obj, rsv1.ReconciliationFailedReason, err)
		}
	}
	cs.Append(unchanged)
	inventory := newInventory(cs)
	stale, err := staleObjects(obj.Status.Inventory, inventory)
	if err != nil {
		return r.failed(obj, rsv1.ReconciliationFailedReason, err)
	}
	changed := obj.Status.LastAppliedRevision != revision
	if len(stale) > 0 {
		if err := r.prune(ctx, rm, obj, stale); err != nil {
			obj.Status.Inventory = mergeInventory(obj.Status.Inventory, inventory)
			return r.failed(obj, rsv1.ReconciliationFailedReason, err)
		}
		changed = true
	}
	obj.Status.Inventory = inventory
	obj.Status.LastAppliedRevision = revision
	if len(toApply) > 0 {
		if live, err = liveVersions(ctx, cl, objects, owner); err != nil {
			live = nil
		}
	}
	if live != nil {
		r.applied.set(key, newAppliedState(revision, objects, live))
	} else {
		r.applied.delete(key)
	}
	if list := changes(cs); list != "" {
		r.EventRecorder.AnnotatedEventf(obj, map[string]string{"revision": revision}, corev1.EventTypeNormal, rsv1.ApplySucceededReason, "%s", list)
		changed = true
	}
	if obj.Spec.Wait && len(cs.Entries) > 0 {
		waitOpts := ssa.WaitOptions{Interval: 2 * time.Second, Timeout: obj.GetTimeout(), FailFast: true}
		if deadline, ok := ctx.Deadline(); ok {
			waitOpts.Timeout = time.Until(deadline)
		}
		if err := rm.WaitForSetWithContext(ctx, cs.ToObjMetadataSet(), waitOpts); err != nil {
			return r.failed(obj, rsv1.HealthCheckFailedReason, fmt.Errorf("health check failed after %s: %w", fmtDuration(time.Since(start)), err))
		}
	}
	msg := fmt.Sprintf("Reconciliation finished in %s", fmtDuration(time.Since(start)))
	if c := conditions.Get(obj, meta.ReadyCondition); changed || c == nil || c.Status != metav1.ConditionTrue {
		r.EventRecorder.AnnotatedEventf(obj, map[string]string{"revision": revision}, corev1.EventTypeNormal, rsv1.ReconciliationSucceededReason, "%s", msg)
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, rsv1.ReconciliationSucceededReason, "%s", msg)
	return nil
}

// defaultNamespaces puts namespaced objects without a namespace in the ResourceSet's, as
// `kubectl apply -n` would; a kind the cluster does not know yet is left for the apply to report.
func (r *ResourceSetReconciler) defaultNamespaces(objects []*unstructured.Unstructured, namespace string) {
	for _, o := range objects {
		if o.GetNamespace() != "" {
			continue
		}
		gvk := o.GroupVersionKind()
		m, err := r.Clients.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil && m.Scope.Name() == apimeta.RESTScopeNameNamespace {
			o.SetNamespace(namespace)
		}
	}
}

// changes lists the objects created, configured or deleted, one per line
// ("HelmRelease/default/podinfo-team1 created"), "" when nothing changed.
func changes(cs *ssa.ChangeSet) string {
	var lines []string
	for _, e := range cs.Entries {
		if e.Action != ssa.UnchangedAction && e.Action != ssa.SkippedAction {
			lines = append(lines, e.String())
		}
	}
	return strings.Join(lines, "\n")
}

// mergeInventory is the union of two inventories (a failed apply keeps both).
func mergeInventory(a, b *rsv1.ResourceInventory) *rsv1.ResourceInventory {
	out := &rsv1.ResourceInventory{}
	seen := map[string]bool{}
	for _, inv := range []*rsv1.ResourceInventory{a, b} {
		if inv == nil {
			continue
		}
		for _, e := range inv.Entries {
			if !seen[e.ID] {
				seen[e.ID] = true
				out.Entries = append(out.Entries, e)
			}
		}
	}
	return out
}

// fmtDuration rounds to what a person reads: 52s, 1.2s, 350ms.
func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}
