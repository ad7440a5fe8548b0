package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/eventmeta"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// ControllerName is the field owner and event source of the source-controller.
const ControllerName = "source-controller"

// defaultTimeout bounds the upstream operations of one reconcile (Git, Helm index, OCI, bucket)
// when spec.timeout is unset.
const defaultTimeout = 60 * time.Second

// source is what the steps every source kind shares need from an object.
type source interface {
	gates.HeldObject
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
	Metrics *conditiongauge.Gauges
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards *sharding.Shards
}

// sourceKind is what the reconcile of a source needs to know of one kind's object, once read.
type sourceKind struct {
	// kind names the object's artifacts in storage.
	kind               string
	suspended          bool
	observedGeneration *int64
	// interval is how soon a source that is up to date, or held by its gates, is reconciled again.
	interval time.Duration
	// ready is Ready's (and ArtifactInStorage's) reason and message once an artifact is stored:
	// the kind's own wording, e.g. HelmChart's "pulled 'podinfo' chart with version '5.2.1'".
	// nil: Succeeded, "stored artifact for revision '<revision>'". Each is Flux's wording for
	// the kind.
	ready func() (reason, message string)
	// withoutArtifact: the object serves no artifact (a HelmRepository of type oci), so storage and
	// gates do not apply and the steps set Ready themselves.
	withoutArtifact bool
	// steps fetch the source and store its artifact. A failing step records its condition and
	// Ready (failed); a step that waits records why (markFailure), returns no error and says how
	// soon to look again (requeueAfter; 0 is the interval).
	steps func(ctx context.Context) (requeueAfter time.Duration, err error)
	// waiting tells, while the gates hold a source that has an artifact, the newer revision they
	// keep back ("" when there is none or it cannot be told cheaply); nil: not told. Behind a gate
	// opened for one revision only, it is the candidate revision the gate is asked about.
	waiting func(ctx context.Context) string
}

// reconcile is the reconcile of every source kind: read the object (describe tells the
// rest), then the start every reconciler shares (shared/status: deletion, the request echo, the
// finalizer, suspension, Reconciling for a new generation), the stored artifact, the gates and
// the kind's steps; the status is patched once, by Finish.
func (r *SourceReconciler) reconcile(ctx context.Context, req ctrl.Request, obj source,
	describe func() sourceKind) (result ctrl.Result, retErr error) {
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	k := describe()
	finisher := status.Finisher{Client: r.Client, Metrics: r.Metrics, FieldOwner: r.ControllerName}
	rec := finisher.Begin(ctx, obj, status.Fields{
		ObservedGeneration: k.observedGeneration, LastHandledReconcileAt: &obj.GetRequestStatus().LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	if obj.GetDeletionTimestamp().IsZero() {
		// Suspended objects too: their URLs must outlive a rotated key.
		r.signURLs(obj)
	}
	if done, err := rec.Preamble(status.Preamble{
		Finalizer: sourcev1.SourceFinalizer, Cleanup: func() error { return r.reconcileDelete(ctx, obj, k.kind) },
		Suspended: k.suspended, SuspendedMessage: "reconciliation is suspended for this object",
	}); done {
		return ctrl.Result{}, err
	}
	if k.withoutArtifact {
		_, err := k.steps(ctx)
		return ctrl.Result{}, err
	}
	r.reconcileStorage(ctx, obj)
	holder := gates.Holder{Reader: r.Client, EventRecorder: r.EventRecorder}
	eval, err := holder.Evaluate(ctx, obj)
	if err != nil {
		return ctrl.Result{RequeueAfter: k.interval}, err
	}
	if eval.Open && eval.RevisionScoped() && k.waiting != nil {
		// A gate opened for one revision only (an approval): the source fetches only that
		// revision, so it asks first which one it would fetch. A kind that cannot tell, or a
		// remote that has nothing new, goes ahead as for any opened gate.
		eval = eval.ForRevision(k.waiting(ctx))
	}
	open := holder.Record(ctx, obj, eval, obj.GetArtifact() == nil)
	if !open {
		// Nothing new is fetched: the stored artifact stays served, and Ready says so, and what
		// waits. Without one, Hold made Ready=False GateClosed.
		if obj.GetArtifact() != nil {
			if eval.Candidate != "" {
				gates.Waiting(obj, eval.Candidate)
			} else if k.waiting != nil {
				gates.Waiting(obj, k.waiting(ctx))
			}
			markReady(obj, k.ready)
			gates.MarkHeldReady(obj)
		}
		return ctrl.Result{RequeueAfter: k.interval}, nil
	}
	requeueAfter, err := k.steps(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	markReady(obj, k.ready)
	if requeueAfter == 0 {
		requeueAfter = k.interval
	}
	return ctrl.Result{RequeueAfter: requeueAfter}, nil
}

// reconcileDelete removes the stored artifacts; the preamble then removes the finalizer.
func (r *SourceReconciler) reconcileDelete(ctx context.Context, obj source, kind string) error {
	art := r.Storage.NewArtifactFor(kind, obj, "", "")
	if dir, err := r.Storage.RemoveAll(art); err != nil {
		r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, sourcev1.GarbageCollectionFailedReason,
			"removing the artifacts of the deleted object: %s", err)
		return err
	} else if dir != "" {
		log.FromContext(ctx).Info("removed the artifacts of the deleted object", "path", dir)
	}
	return nil
}

// reconcileStorage checks that the stored artifact is still on disk and intact (else it is
// rebuilt) and collects old artifacts; reconcile refreshed its URL.
func (r *SourceReconciler) reconcileStorage(ctx context.Context, obj source) {
	art := obj.GetArtifact()
	if art == nil {
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		return
	}
	if err := r.Storage.Verify(*art); err != nil {
		msg := fmt.Sprintf("stored artifact of revision '%s' is missing or corrupt, rebuilding it: %s", art.Revision, err)
		r.EventRecorder.Event(obj, corev1.EventTypeWarning, sourcev1.StatOperationFailedReason, msg)
		obj.SetArtifact(nil)
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		return
	}
	if deleted, err := r.Storage.GarbageCollect(ctx, *art, 30*time.Second); err != nil {
		r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, sourcev1.GarbageCollectionFailedReason,
			"garbage collection of old artifacts failed: %s", err)
	} else if len(deleted) > 0 {
		log.FromContext(ctx).Info(fmt.Sprintf("garbage collected %d artifacts", len(deleted)))
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision '%s'", art.Revision)
}

// storeArtifact makes art the served artifact, with the stable link linkName pointing at it,
// and records one event (reason, eventMsg) annotated with its revision; it returns the link's
// URL.
func (r *SourceReconciler) storeArtifact(obj source, art meta.Artifact, linkName, reason, eventMsg string) (string, error) {
	url, err := r.Storage.Symlink(art, linkName)
	if err != nil {
		return "", r.storageFailed(obj, sourcev1.ArchiveOperationFailedReason, err)
	}
	obj.SetArtifact(&art)
	conditions.Delete(obj, sourcev1.StorageOperationFailedCondition)
	conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision '%s'", art.Revision)
	r.EventRecorder.AnnotatedEventf(obj, eventmeta.Revision(sourcev1.GroupVersion.Group, art.Revision), corev1.EventTypeNormal,
		reason, "%s", status.Redact(eventMsg))
	return url, nil
}

func (r *SourceReconciler) fetchFailed(obj source, reason string, err error) error {
	return r.failed(obj, sourcev1.FetchFailedCondition, reason, err)
}

func (r *SourceReconciler) storageFailed(obj source, reason string, err error) error {
	return r.failed(obj, sourcev1.StorageOperationFailedCondition, reason, storageFull(err))
}

// failed records a step's failure (its condition and Ready, markFailure) with a Warning event,
// and returns err.
func (r *SourceReconciler) failed(obj source, condition, reason string, err error) error {
	msg := status.UserMessage(err)
	markFailure(obj, condition, reason, msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	return err
}

// stepConditions are the conditions by which steps say they failed, with their failing status
// (SourceVerified is the one of positive polarity), in the order Ready reports them when several
// fail at once.
var stepConditions = []struct {
	condition string
	failing   metav1.ConditionStatus
}{
	{sourcev1.FetchFailedCondition, metav1.ConditionTrue},
	{sourcev1.IncludeUnavailableCondition, metav1.ConditionTrue},
	{sourcev1.SourceVerifiedCondition, metav1.ConditionFalse},
	{sourcev1.BuildFailedCondition, metav1.ConditionTrue},
	{sourcev1.StorageOperationFailedCondition, metav1.ConditionTrue},
}

// failingStep is the first failing step condition in that order, nil when none fails.
func failingStep(obj source) *metav1.Condition {
	for _, s := range stepConditions {
		if c := conditions.Get(obj, s.condition); c != nil && c.Status == s.failing {
			return c
		}
	}
	return nil
}

// markFailure sets a step condition (one of stepConditions) to its failing status, and Ready to
// False with the reason and message of the first failing step condition: this one, unless one
// before it fails too.
func markFailure(obj source, condition, reason, msg string) {
	for _, s := range stepConditions {
		if s.condition == condition {
			conditions.Set(obj, &metav1.Condition{Type: condition, Status: s.failing, Reason: reason, Message: msg})
		}
	}
	if c := failingStep(obj); c != nil {
		reason, msg = c.Reason, c.Message
	}
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", msg)
}

// markReady sets Ready at the end of steps that returned no error: False while a step condition
// still fails (a source the chart waits for), else True with the kind's wording (ready, see
// sourceKind) for the stored artifact, which ArtifactInStorage repeats. Without an artifact
// Ready stays as the steps left it.
func markReady(obj source, ready func() (string, string)) {
	if c := failingStep(obj); c != nil {
		conditions.MarkFalse(obj, meta.ReadyCondition, c.Reason, "%s", c.Message)
		return
	}
	art := obj.GetArtifact()
	if art == nil {
		return
	}
	reason, msg := meta.SucceededReason, fmt.Sprintf("stored artifact for revision '%s'", art.Revision)
	if ready != nil {
		reason, msg = ready()
		msg = status.Redact(msg) // a kind's wording may name its spec.url
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, reason, "%s", msg)
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, reason, "%s", msg)
}

// readyWithColon is the Ready wording of Flux's HelmRepository and Bucket, "stored artifact:
// revision '<revision>'", which `flux get sources helm|bucket` prints.
func readyWithColon(obj source) (string, string) {
	return meta.SucceededReason, fmt.Sprintf("stored artifact: revision '%s'", obj.GetArtifact().Revision)
}

// storageReason is the StorageOperationFailed reason of an archive or copy error.
func storageReason(err error) string {
	if errors.Is(err, storage.ErrArtifactTooLarge) {
		return sourcev1.ArtifactTooLargeReason
	}
	return sourcev1.ArchiveOperationFailedReason
}

// ignoreEqual: two spec.ignore values are the same rules.
func ignoreEqual(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
