package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/status"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/build"
)

// sourceGroupVersion is the API of the sources the generation reads (source-controller's).
const sourceGroupVersion = "source.toolkit.fluxcd.io/v1"

// reconcileGates: while the gates are closed nothing new is applied, and Blocked=True says
// until when; a generation that never applied anything is not ready.
func (r *ManifestGenerationReconciler) reconcileGates(ctx context.Context, obj *generatorv1.ManifestGeneration) (bool, error) {
	return gates.Hold(ctx, r.Client, obj, obj.Status.LastAppliedRevision == "")
}

// newSource is an empty object of the source kind, read through the CRD contract (the
// manifest-generator does not import the source-controller).
func newSource(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(sourceGroupVersion)
	u.SetKind(kind)
	return u
}

// sourceArtifact reads the artifact of spec.sourceRef; waitMsg says why there is none yet.
func (r *ManifestGenerationReconciler) sourceArtifact(ctx context.Context, obj *generatorv1.ManifestGeneration) (build.Artifact, string, error) {
	ref := obj.Spec.SourceRef
	src := newSource(ref.Kind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return build.Artifact{}, fmt.Sprintf("%s '%s/%s' not found", ref.Kind, obj.Namespace, ref.Name), nil
		}
		return build.Artifact{}, "", err
	}
	// Field by field: the artifact also holds non-string fields (size, metadata).
	field := func(name string) string {
		v, _, _ := unstructured.NestedString(src.Object, "status", "artifact", name)
		return v
	}
	art := build.Artifact{URL: field("url"), Digest: field("digest"), Revision: field("revision")}
	if art.URL == "" || art.Digest == "" {
		return build.Artifact{}, fmt.Sprintf("%s '%s/%s' has no artifact yet", ref.Kind, obj.Namespace, ref.Name), nil
	}
	return art, "", nil
}

// clientFor is the client of the generation's account; a missing account is named.
func (r *ManifestGenerationReconciler) clientFor(ctx context.Context, obj *generatorv1.ManifestGeneration) (impersonation.Client, error) {
	if sa := r.Clients.ServiceAccount(obj.Namespace, obj.Spec.ServiceAccountName); sa != "" {
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: sa}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return impersonation.Client{}, r.failed(obj, generatorv1.ReconciliationFailedReason,
				fmt.Errorf("ServiceAccount '%s/%s' does not exist: create it or set spec.serviceAccountName", obj.Namespace, sa))
		}
		if err != nil {
			return impersonation.Client{}, err
		}
	}
	return r.Clients.For(obj.Namespace, obj.Spec.ServiceAccountName)
}

// applier applies as the generation's account, with this API group's annotations.
func (r *ManifestGenerationReconciler) applier(cl impersonation.Client) *apply.Applier {
	return &apply.Applier{
		Client: cl, Mapper: r.Clients.Mapper, FieldManager: ControllerName, OwnerGroup: ownerGroup,
		Concurrency: r.ApplyConcurrency, Memory: &r.applied,
		Annotations: apply.Annotations{Reconcile: ReconcileAnnotation, Force: ForceAnnotation, Prune: PruneAnnotation},
	}
}

// reconcileDelete removes what the generation applied (with spec.prune), then its finalizer; a
// generation whose account is gone leaves its objects, with a warning, rather than block.
func (r *ManifestGenerationReconciler) reconcileDelete(ctx context.Context, obj *generatorv1.ManifestGeneration) error {
	if !controllerutil.ContainsFinalizer(obj, generatorv1.Finalizer) {
		return nil
	}
	if obj.GetPrune() && !obj.Spec.Suspend && obj.Status.Inventory != nil && len(obj.Status.Inventory.Entries) > 0 {
		cl, err := r.clientFor(ctx, obj)
		if err != nil {
			r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, generatorv1.ReconciliationFailedReason,
				"the generated objects were left in place: %s", status.UserMessage(err))
		} else {
			start := time.Now()
			pruned, err := r.applier(cl).Delete(ctx, client.ObjectKeyFromObject(obj), entries(obj.Status.Inventory))
			if err != nil {
				return fmt.Errorf("garbage collection: %w", err)
			}
			if len(pruned) > 0 {
				r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, "GarbageCollectionSucceeded", "%s\nGarbage collection finished in %s",
					joinLines(pruned), apply.FmtDuration(time.Since(start)))
			}
		}
	}
	r.applied.Forget(client.ObjectKeyFromObject(obj))
	controllerutil.RemoveFinalizer(obj, generatorv1.Finalizer)
	return nil
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }

// entries is the status inventory in the applier's terms.
func entries(inv *generatorv1.ResourceInventory) []apply.Entry {
	if inv == nil {
		return nil
	}
	out := make([]apply.Entry, len(inv.Entries))
	for i, e := range inv.Entries {
		out[i] = apply.Entry{ID: e.ID, Version: e.Version}
	}
	return out
}

// inventoryOf is the status inventory of applier entries.
func inventoryOf(entries []apply.Entry) *generatorv1.ResourceInventory {
	inv := &generatorv1.ResourceInventory{Entries: make([]generatorv1.ResourceRef, len(entries))}
	for i, e := range entries {
		inv.Entries[i] = generatorv1.ResourceRef{ID: e.ID, Version: e.Version}
	}
	return inv
}
