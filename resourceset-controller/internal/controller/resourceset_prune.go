package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// fluxApplierWait is how long garbage collection waits for deleted Flux Kustomizations and
// HelmReleases to be finalized before it deletes the rest (their ServiceAccounts, RoleBindings).
const fluxApplierWait = time.Minute

// GarbageCollectionSucceededReason is the reason of the event listing pruned objects.
const GarbageCollectionSucceededReason = "GarbageCollectionSucceeded"

// prune deletes stale objects in stages (seed 001): Flux objects first, then, once the Flux
// appliers among them are finalized (at most a minute), everything else. Objects annotated
// fluxcd.controlplane.io/prune: disabled, or not labelled as this ResourceSet's, stay. An event
// lists what was removed and how long it took.
func (r *ResourceSetReconciler) prune(ctx context.Context, rm *ssa.ResourceManager, obj *rsv1.ResourceSet, stale []*unstructured.Unstructured) error {
	start := time.Now()
	opts := ssa.DeleteOptions{
		PropagationPolicy: metav1.DeletePropagationBackground,
		Inclusions:        rm.GetOwnerLabels(obj.Name, obj.Namespace),
		Exclusions:        map[string]string{rsv1.PruneAnnotation: rsv1.DisabledValue},
	}
	var flux, rest []*unstructured.Unstructured
	for _, o := range stale {
		if isFluxObject(o) {
			flux = append(flux, o)
		} else {
			rest = append(rest, o)
		}
	}
	deleted := ssa.NewChangeSet()
	if len(flux) > 0 {
		cs, err := rm.DeleteAll(ctx, flux, opts)
		deleted.Append(cs.Entries)
		if err != nil {
			return err
		}
		appliers := ssa.NewChangeSet()
		for _, e := range cs.Entries {
			if e.Action == ssa.DeletedAction && (e.ObjMetadata.GroupKind.Kind == "Kustomization" || e.ObjMetadata.GroupKind.Kind == "HelmRelease") {
				appliers.Add(e)
			}
		}
		if len(appliers.Entries) > 0 {
			if err := rm.WaitForSetTermination(appliers, ssa.WaitOptions{Interval: time.Second, Timeout: fluxApplierWait}); err != nil {
				log.FromContext(ctx).Info("Flux appliers were not finalized in time, deleting the rest", "error", err.Error())
			}
		}
	}
	if len(rest) > 0 {
		cs, err := rm.DeleteAll(ctx, rest, opts)
		deleted.Append(cs.Entries)
		if err != nil {
			return err
		}
	}
	var lines []string
	for _, e := range deleted.Entries {
		if e.Action == ssa.DeletedAction {
			lines = append(lines, e.String())
		}
	}
	if len(lines) > 0 {
		sort.Strings(lines)
		r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, GarbageCollectionSucceededReason, "%s\nGarbage collection finished in %s",
			strings.Join(lines, "\n"), fmtDuration(time.Since(start)))
	}
	return nil
}

// isFluxObject: an object of a Flux API (toolkit.fluxcd.io) or of the Flux operator APIs.
func isFluxObject(o *unstructured.Unstructured) bool {
	g := o.GroupVersionKind().Group
	return strings.HasSuffix(g, ".toolkit.fluxcd.io") || g == rsv1.GroupVersion.Group
}

// reconcileDelete removes what the ResourceSet applied, then its finalizer. A paused
// (reconcile: disabled) ResourceSet leaves its objects; so does one whose account is gone, with
// a warning, rather than block its deletion forever.
func (r *ResourceSetReconciler) reconcileDelete(ctx context.Context, obj *rsv1.ResourceSet) error {
	if !controllerutil.ContainsFinalizer(obj, rsv1.Finalizer) {
		return nil
	}
	if !obj.IsDisabled() && obj.Status.Inventory != nil && len(obj.Status.Inventory.Entries) > 0 {
		cl, err := r.clientFor(ctx, obj)
		if err != nil {
			r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, rsv1.ReconciliationFailedReason,
				"the generated objects were left in place: %s", userMessage(err))
		} else {
			stale, err := staleObjects(obj.Status.Inventory, nil)
			if err != nil {
				return err
			}
			if err := r.prune(ctx, r.resourceManager(cl), obj, stale); err != nil {
				return fmt.Errorf("garbage collection: %w", err)
			}
		}
	}
	r.applied.delete(client.ObjectKeyFromObject(obj))
	controllerutil.RemoveFinalizer(obj, rsv1.Finalizer)
	return nil
}
