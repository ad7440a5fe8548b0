package controller

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	"github.com/fluxcd/pkg/runtime/patch"
	corev1 "k8s.io/api/core/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gates"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// ControllerName is the field owner and event source of the source-controller.
const ControllerName = "source-controller"

// ownedConditions are the conditions the GitRepository reconciler writes.
var ownedConditions = []string{
	meta.ReadyCondition, meta.ReconcilingCondition, meta.StalledCondition,
	sourcev1.FetchFailedCondition, sourcev1.ArtifactOutdatedCondition, sourcev1.ArtifactInStorageCondition,
	sourcev1.StorageOperationFailedCondition, gates.BlockedCondition,
}

// GitRepositoryReconciler fetches Git repositories and stores their content as artifacts.
type GitRepositoryReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	Storage       *storage.Storage
	// ControllerName is the field owner of status patches.
	ControllerName string
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories/status;gitrepositories/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &sourcev1.GitRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := patch.NewSerialPatcher(obj, r.Client)
	defer func() { retErr = r.finalizeStatus(ctx, obj, patcher, retErr) }()

	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, obj)
	}
	if !controllerutil.ContainsFinalizer(obj, sourcev1.SourceFinalizer) {
		controllerutil.AddFinalizer(obj, sourcev1.SourceFinalizer)
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.Status.SetLastHandledReconcileRequest(v)
	}
	if obj.Spec.Suspend {
		log.FromContext(ctx).Info("reconciliation is suspended for this object")
		return ctrl.Result{}, nil
	}
	interval := jitter.JitteredIntervalDuration(obj.Spec.Interval.Duration)

	if err := r.reconcileStorage(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	if blocked, err := r.reconcileGates(ctx, obj); err != nil || blocked {
		return ctrl.Result{RequeueAfter: interval}, err
	}
	tmp, err := os.MkdirTemp("", "gitrepository-*")
	if err != nil {
		return ctrl.Result{}, err
	}
	defer os.RemoveAll(tmp)
	commit, changed, err := r.reconcileSource(ctx, obj, tmp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed {
		if err := r.reconcileArtifact(ctx, obj, commit, tmp); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}

// finalizeStatus summarises the conditions into Ready/Reconciling/Stalled and patches the
// status once.
func (r *GitRepositoryReconciler) finalizeStatus(ctx context.Context, obj *sourcev1.GitRepository,
	patcher *patch.SerialPatcher, err error) error {
	if obj.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(obj, sourcev1.SourceFinalizer) {
		summarize(obj, err)
	}
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		obj.Status.ObservedGeneration = obj.Generation
	}
	if perr := patcher.Patch(ctx, obj, patch.WithOwnedConditions{Conditions: ownedConditions},
		patch.WithFieldOwner(r.ControllerName)); perr != nil {
		if !obj.DeletionTimestamp.IsZero() && client.IgnoreNotFound(perr) == nil {
			return err // deleted while we finished: nothing left to patch
		}
		return errors.Join(err, perr)
	}
	return err
}

// summarize sets Ready from the step conditions: the failure of a step, else the gates holding
// an object that has no artifact yet, else the stored artifact.
func summarize(obj *sourcev1.GitRepository, err error) {
	for _, t := range []string{sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition} {
		if c := conditions.Get(obj, t); c != nil && c.Status == "True" {
			conditions.MarkFalse(obj, meta.ReadyCondition, c.Reason, "%s", c.Message)
			if errors.Is(err, reconcile.TerminalError(nil)) {
				conditions.MarkStalled(obj, c.Reason, "%s", c.Message)
				conditions.Delete(obj, meta.ReconcilingCondition)
			} else {
				conditions.MarkReconciling(obj, meta.ProgressingWithRetryReason, "%s", c.Message)
			}
			return
		}
	}
	if err != nil {
		conditions.MarkFalse(obj, meta.ReadyCondition, meta.FailedReason, "%s", err)
		conditions.MarkReconciling(obj, meta.ProgressingWithRetryReason, "%s", err)
		return
	}
	conditions.Delete(obj, meta.StalledCondition)
	conditions.Delete(obj, meta.ReconcilingCondition)
	if obj.Status.Artifact == nil {
		if c := conditions.Get(obj, gates.BlockedCondition); c != nil {
			conditions.MarkFalse(obj, meta.ReadyCondition, gates.GateClosedReason, "%s", c.Message)
		}
		return
	}
	msg := fmt.Sprintf("stored artifact for revision '%s'", obj.Status.Artifact.Revision)
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "%s", msg)
}

// reconcileDelete removes the stored artifacts and then the finalizer.
func (r *GitRepositoryReconciler) reconcileDelete(ctx context.Context, obj *sourcev1.GitRepository) error {
	art := r.Storage.NewArtifactFor(sourcev1.GitRepositoryKind, obj, "", "")
	if dir, err := r.Storage.RemoveAll(art); err != nil {
		r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, sourcev1.GarbageCollectionFailedReason,
			"removing the artifacts of the deleted object: %s", err)
		return err
	} else if dir != "" {
		log.FromContext(ctx).Info("removed the artifacts of the deleted object", "path", dir)
	}
	controllerutil.RemoveFinalizer(obj, sourcev1.SourceFinalizer)
	return nil
}
