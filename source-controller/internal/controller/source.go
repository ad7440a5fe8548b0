package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/status"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// ControllerName is the field owner and event source of the source-controller.
const ControllerName = "source-controller"

// source is what the steps every source kind shares need from an object.
type source interface {
	conditions.Setter
	gatesapi.Gated
	GetArtifact() *meta.Artifact
	SetArtifact(*meta.Artifact)
	GetRequestStatus() *meta.ReconcileRequestStatus
}

// SourceReconciler holds what every source reconciler uses: the API client, events and the
// artifact storage. Each kind's reconciler embeds it.
type SourceReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	Storage       *storage.Storage
	// ControllerName is the field owner of status patches.
	ControllerName string
	// Metrics records the gotk_reconcile_condition gauges Flux's dashboards read; nil records none.
	Metrics *runtimectrl.Metrics
}

// preamble handles what comes before the steps: deletion (artifacts removed, then the
// finalizer), the finalizer, the reconcile request echo and suspension. done means the
// reconcile ends here.
func (r *SourceReconciler) preamble(ctx context.Context, obj source, kind string, suspended bool) (done bool, err error) {
	if !obj.GetDeletionTimestamp().IsZero() {
		return true, r.reconcileDelete(ctx, obj, kind)
	}
	controllerutil.AddFinalizer(obj, sourcev1.SourceFinalizer)
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.GetRequestStatus().SetLastHandledReconcileRequest(v)
	}
	if suspended {
		log.FromContext(ctx).Info("reconciliation is suspended for this object")
		return true, nil
	}
	return false, nil
}

// finalizeStatus summarises the conditions into Ready/Reconciling/Stalled and patches the
// status once. ready, when set, gives the Ready reason and message of a success (the kind's own
// wording, e.g. HelmChart's "pulled 'podinfo' chart with version '5.2.1'").
func (r *SourceReconciler) finalizeStatus(ctx context.Context, obj source, patcher *status.Patcher,
	observedGeneration *int64, err error, ready func() (string, string)) error {
	if obj.GetDeletionTimestamp().IsZero() {
		summarize(obj, err)
		if c := conditions.Get(obj, meta.ReadyCondition); ready != nil && c != nil && c.Status == metav1.ConditionTrue {
			reason, msg := ready()
			conditions.MarkTrue(obj, meta.ReadyCondition, reason, "%s", msg)
			conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, reason, "%s", msg)
		}
	}
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		*observedGeneration = obj.GetGeneration()
	}
	if r.Metrics != nil {
		r.Metrics.RecordReadiness(ctx, obj)
		r.Metrics.RecordReconciling(ctx, obj)
		r.Metrics.RecordStalled(ctx, obj)
	}
	if perr := patcher.Patch(ctx, obj, r.ControllerName); perr != nil {
		if !obj.GetDeletionTimestamp().IsZero() && status.Gone(perr) {
			return err // deleted while we finished: nothing left to patch
		}
		return errors.Join(err, perr)
	}
	return err
}

// summarize sets Ready from the step conditions: the failure of a step, else the gates holding
// an object that has no artifact yet, else the stored artifact.
func summarize(obj source, err error) {
	for _, t := range []string{sourcev1.FetchFailedCondition, sourcev1.SourceVerifiedCondition, sourcev1.BuildFailedCondition, sourcev1.StorageOperationFailedCondition} {
		// SourceVerified is the one step condition of positive polarity: False is the failure.
		failing := metav1.ConditionTrue
		if t == sourcev1.SourceVerifiedCondition {
			failing = metav1.ConditionFalse
		}
		if c := conditions.Get(obj, t); c != nil && c.Status == failing {
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
		conditions.MarkFalse(obj, meta.ReadyCondition, meta.FailedReason, "%s", userMessage(err))
		conditions.MarkReconciling(obj, meta.ProgressingWithRetryReason, "%s", userMessage(err))
		return
	}
	conditions.Delete(obj, meta.StalledCondition)
	conditions.Delete(obj, meta.ReconcilingCondition)
	if obj.GetArtifact() == nil {
		if c := conditions.Get(obj, gatesapi.BlockedCondition); c != nil {
			conditions.MarkFalse(obj, meta.ReadyCondition, gatesapi.GateClosedReason, "%s", c.Message)
		}
		return
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason,
		"stored artifact for revision '%s'", obj.GetArtifact().Revision)
}

// reconcileDelete removes the stored artifacts and then the finalizer.
func (r *SourceReconciler) reconcileDelete(ctx context.Context, obj source, kind string) error {
	art := r.Storage.NewArtifactFor(kind, obj, "", "")
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

// reconcileStorage checks that the stored artifact is still on disk and intact (else it is
// rebuilt), refreshes its URL and collects old artifacts.
func (r *SourceReconciler) reconcileStorage(ctx context.Context, obj source) error {
	art := obj.GetArtifact()
	if art == nil {
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		return nil
	}
	if err := r.Storage.Verify(*art); err != nil {
		msg := fmt.Sprintf("stored artifact of revision '%s' is missing or corrupt, rebuilding it: %s", art.Revision, err)
		r.EventRecorder.Event(obj, corev1.EventTypeWarning, sourcev1.StatOperationFailedReason, msg)
		obj.SetArtifact(nil)
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		return nil
	}
	r.Storage.SetArtifactURL(art)
	if deleted, err := r.Storage.GarbageCollect(ctx, *art, 30*time.Second); err != nil {
		r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, sourcev1.GarbageCollectionFailedReason,
			"garbage collection of old artifacts failed: %s", err)
	} else if len(deleted) > 0 {
		log.FromContext(ctx).Info(fmt.Sprintf("garbage collected %d artifacts", len(deleted)))
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision '%s'", art.Revision)
	return nil
}

// reconcileGates keeps the last artifact while the gates are closed: nothing new is fetched.
func (r *SourceReconciler) reconcileGates(ctx context.Context, obj source) (bool, error) {
	spec := obj.GetGates()
	res, err := gates.Evaluate(ctx, r.Client, obj.GetNamespace(), spec)
	if err != nil {
		return false, err
	}
	if spec != nil && len(spec.Refs) > 0 {
		log.FromContext(ctx).Info("evaluated gates", "gates", res.LogValue())
	}
	if res.Open {
		conditions.Delete(obj, gatesapi.BlockedCondition)
		return false, nil
	}
	conditions.MarkTrue(obj, gatesapi.BlockedCondition, gatesapi.GateClosedReason, "%s", res.Message())
	return true, nil
}

// storeArtifact makes art the served artifact, with the stable link linkName pointing at it;
// it returns the link's URL.
func (r *SourceReconciler) storeArtifact(obj source, art meta.Artifact, linkName, eventMsg string) (string, error) {
	url, err := r.Storage.Symlink(art, linkName)
	if err != nil {
		return "", r.storageFailed(obj, sourcev1.ArchiveOperationFailedReason, err)
	}
	obj.SetArtifact(&art)
	conditions.Delete(obj, sourcev1.StorageOperationFailedCondition)
	conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision '%s'", art.Revision)
	r.EventRecorder.AnnotatedEventf(obj, map[string]string{"revision": art.Revision}, corev1.EventTypeNormal,
		sourcev1.NewArtifactReason, "%s", eventMsg)
	return url, nil
}

func (r *SourceReconciler) fetchFailed(obj source, reason string, err error) error {
	return r.failed(obj, sourcev1.FetchFailedCondition, reason, err)
}

func (r *SourceReconciler) storageFailed(obj source, reason string, err error) error {
	return r.failed(obj, sourcev1.StorageOperationFailedCondition, reason, err)
}

// failed records a step's failure as a condition and a Warning event, and returns err.
func (r *SourceReconciler) failed(obj source, condition, reason string, err error) error {
	msg := userMessage(err)
	conditions.MarkTrue(obj, condition, reason, "%s", msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	return err
}

// userMessage is an error's text without controller-runtime's "terminal error: " prefix.
func userMessage(err error) string {
	if errors.Is(err, reconcile.TerminalError(nil)) {
		if inner := errors.Unwrap(err); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}
