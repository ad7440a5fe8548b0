package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/eventmeta"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/update"
)

// ManifestUpdateReconciler writes the change a ManifestUpdate asks for into the Git repository
// of its ManifestGeneration: it clones the branch, edits the raw YAML, rewrites the patch file
// or runs the updaters, verifies that exactly the requested change happened, commits and pushes.
// A ManifestUpdate is done once: after its commit (or when nothing had to change) it is left
// alone until its spec changes.
type ManifestUpdateReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards  *sharding.Shards
	Metrics *conditiongauge.Gauges
	// Updater clones, changes, verifies, commits and pushes (required).
	Updater *update.Updater
	// DefaultTimeout of commands when the ManifestGeneration has no spec.timeout (--sync-timeout).
	DefaultTimeout time.Duration
	// RequeueDependency is how soon an update whose ManifestGeneration or GitRepository is
	// missing is retried.
	RequeueDependency time.Duration
	// ForgeClient reaches the forges' APIs for pull requests, with the address policy of the
	// registries (--external-service-allowed-cidrs, --service-cidr); nil refuses pull requests.
	ForgeClient *http.Client
	// Clock dates the reconcile request a pushed change sends its GitRepository (the real clock
	// when nil).
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestupdates,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestupdates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestgenerations,verbs=get;list;watch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

func (r *ManifestUpdateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &generatorv1.ManifestUpdate{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	newRequest := false
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok && v != obj.Status.LastHandledReconcileAt {
		newRequest = true
	}
	// A done change with nothing new asked of it has nothing to write.
	if !newRequest && !committed(obj) && r.done(obj, false) {
		return ctrl.Result{}, nil
	}
	rec := status.Finisher{Client: r.Client, Metrics: r.Metrics, FieldOwner: ControllerName}.Begin(ctx, obj, status.Fields{
		ObservedGeneration: &obj.Status.ObservedGeneration, LastHandledReconcileAt: &obj.Status.LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	if obj.Generation != obj.Status.ObservedGeneration {
		// A new spec asks for a new change: the last commit is not its.
		obj.Status.Commit = ""
	}
	// A ManifestUpdate has no finalizer (a deleted one has nothing to undo) and cannot be
	// suspended.
	if done, err := rec.Preamble(status.Preamble{}); done {
		return ctrl.Result{}, err
	}
	if committed(obj) {
		return r.followCommitted(ctx, obj)
	}
	if r.done(obj, newRequest) {
		// The request is echoed; the change stays done.
		return ctrl.Result{}, nil
	}
	return r.reconcile(ctx, obj)
}

// followCommitted keeps the Ready condition of a pushed change true to whether the gates of its
// generation hold it; nothing is pushed again.
func (r *ManifestUpdateReconciler) followCommitted(ctx context.Context, obj *generatorv1.ManifestUpdate) (ctrl.Result, error) {
	target, waitMsg, err := r.target(ctx, obj)
	if err != nil || waitMsg != "" {
		// The generation or its source went away: what was pushed stays as reported.
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.markCommitted(ctx, obj, target)
}

// done: the change of the current generation was committed (or needed no commit), or failed in
// a way only a new spec (or a reconcile request) can fix.
func (r *ManifestUpdateReconciler) done(obj *generatorv1.ManifestUpdate, newRequest bool) bool {
	if obj.Status.ObservedGeneration != obj.Generation {
		return false
	}
	ready := conditions.Get(obj, meta.ReadyCondition)
	if ready == nil || ready.ObservedGeneration != obj.Generation {
		return false
	}
	if ready.Status == metav1.ConditionTrue && (ready.Reason == generatorv1.CommittedReason || ready.Reason == generatorv1.NoChangeReason) {
		return true
	}
	return conditions.IsStalled(obj) && !newRequest
}

// reconcile runs the steps: gates, the ManifestGeneration and its GitRepository, the push.
func (r *ManifestUpdateReconciler) reconcile(ctx context.Context, obj *generatorv1.ManifestUpdate) (ctrl.Result, error) {
	open, err := gates.Holder{Reader: r.Client, EventRecorder: r.EventRecorder}.Hold(ctx, obj, true)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !open {
		return ctrl.Result{}, nil
	}
	// The message first: a template that gives none fails before anything is read or cloned.
	message, err := commitMessage(ctx, obj)
	if err != nil {
		return ctrl.Result{}, r.failed(obj, messageReason(err), err)
	}
	target, waitMsg, err := r.target(ctx, obj)
	if err != nil {
		return ctrl.Result{}, r.failed(obj, meta.ReconciliationFailedReason, err)
	}
	if waitMsg != "" {
		conditions.MarkFalse(obj, meta.ReadyCondition, generatorv1.DependencyNotReadyReason, "%s", waitMsg)
		return ctrl.Result{RequeueAfter: r.RequeueDependency}, nil
	}
	commit, err := r.Updater.Push(ctx, update.Request{Update: obj, Target: target, Message: message})
	if err != nil {
		var ue *update.Error
		if errors.As(err, &ue) {
			return ctrl.Result{}, r.failed(obj, ue.Reason, ue.Result())
		}
		return ctrl.Result{}, r.failed(obj, generatorv1.PushFailedReason, err)
	}
	if commit == "" {
		msg := fmt.Sprintf("branch '%s' already has the change: nothing to commit", target.Branch)
		conditions.MarkTrue(obj, meta.ReadyCondition, generatorv1.NoChangeReason, "%s", msg)
		r.EventRecorder.Event(obj, corev1.EventTypeNormal, generatorv1.NoChangeReason, msg)
		return ctrl.Result{}, nil
	}
	if obj.Spec.PullRequest != nil {
		pr, err := r.propose(ctx, obj, target, message)
		if err != nil {
			// Pushed but not proposed: the next attempt pushes the branch again and proposes it.
			return ctrl.Result{}, r.failed(obj, generatorv1.PullRequestFailedReason, err)
		}
		obj.Status.PullRequest = pr
	}
	obj.Status.Commit = commit
	if err := r.markCommitted(ctx, obj, target); err != nil {
		return ctrl.Result{}, err
	}
	r.EventRecorder.AnnotatedEventf(obj, eventmeta.Revision(generatorv1.GroupVersion.Group, target.Branch+"@sha1:"+commit),
		corev1.EventTypeNormal, generatorv1.CommittedReason, "%s", committedMessage(obj, target))
	if target.FromBase {
		return ctrl.Result{}, nil // the source's branch has not moved: the pull request's merge moves it
	}
	if err := r.requestSourceReconcile(ctx, obj.Namespace, target.RepoName); err != nil && !apierrors.IsNotFound(err) {
		// The commit is pushed; the source sees it at its next interval anyway.
		r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, "ReconcileRequestFailed",
			"could not ask GitRepository '%s/%s' to fetch the new commit: %s", obj.Namespace, target.RepoName, err.Error())
	}
	return ctrl.Result{}, nil
}

// failed records a failure as Ready=False with reason and a Warning event, and returns err.
func (r *ManifestUpdateReconciler) failed(obj *generatorv1.ManifestUpdate, reason string, err error) error {
	msg := status.UserMessage(err)
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	return err
}

func (r *ManifestUpdateReconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}
