package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/status"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/builder"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/dependency"
)

// ResourceSetReconciler renders ResourceSets and applies the objects with server-side apply, as
// the ResourceSet's account, keeping an inventory of what it applied.
type ResourceSetReconciler struct {
	client.Client
	// APIReader reads what must not come from the cache (ServiceAccounts).
	APIReader     client.Reader
	EventRecorder kuberecorder.EventRecorder
	// Clients act as the account of each ResourceSet (spec.serviceAccountName,
	// --default-service-account).
	Clients *impersonation.Clients
	// ControllerName is the field manager of applied objects.
	ControllerName string
	// RequeueDependency is how soon unmet dependencies are checked again (--requeue-dependency).
	RequeueDependency time.Duration
	// Dependencies caches compiled readyExpr programs.
	Dependencies *dependency.Cache
	// Metrics records the gotk_reconcile_condition gauges; nil records none.
	Metrics *runtimectrl.Metrics
	// ApplyConcurrency is the number of objects dry-run and applied at once.
	ApplyConcurrency int

	applied apply.Memory
}

// +kubebuilder:rbac:groups=fluxcd.controlplane.io,resources=resourcesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fluxcd.controlplane.io,resources=resourcesets/status;resourcesets/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;impersonate
// The controller applies arbitrary objects for ResourceSets without a service account.
// +kubebuilder:rbac:groups=*,resources=*,verbs=*

func (r *ResourceSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	obj := &rsv1.ResourceSet{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.applied.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := status.NewPatcher(obj, r.Client)
	defer func() {
		retErr = finalizeStatus(ctx, patcher, obj, &obj.Status.ObservedGeneration, retErr, r.Metrics)
	}()

	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, obj)
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.Status.SetLastHandledReconcileRequest(v)
	}
	if obj.IsDisabled() {
		log.FromContext(ctx).Info("reconciliation is disabled by the annotation " + rsv1.ReconcileAnnotation)
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(obj, rsv1.Finalizer)
	interval := jitter.JitteredIntervalDuration(obj.GetInterval())
	var prior *metav1.Condition
	if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
		prior = c.DeepCopy()
	}
	if obj.Generation != obj.Status.ObservedGeneration {
		// A new spec: say so at once (kstatus readers wait on it), as the seed describes.
		if err := status.Progressing(ctx, patcher, obj, ControllerName); err != nil {
			return ctrl.Result{}, err
		}
	}
	// The timeout (reconcileTimeout) bounds the steps, not the status patch of the defer.
	sctx, cancel := context.WithTimeout(ctx, obj.GetTimeout())
	defer cancel()
	return r.reconcile(sctx, obj, start, interval, prior)
}

// reconcile runs the steps: gates, inputs, dependencies, build, apply, prune, health checks.
// prior is the Ready condition before this reconcile, restored when closed gates hold a new
// build back (what was applied is still what Ready described).
func (r *ResourceSetReconciler) reconcile(ctx context.Context, obj *rsv1.ResourceSet, start time.Time, interval time.Duration,
	prior *metav1.Condition) (ctrl.Result, error) {
	open, err := r.reconcileGates(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	groups, waiting, err := r.collectInputs(ctx, obj)
	if err != nil || waiting {
		return ctrl.Result{RequeueAfter: r.RequeueDependency}, err
	}
	if waiting, err := r.checkDependencies(ctx, obj); err != nil || waiting {
		return ctrl.Result{RequeueAfter: r.RequeueDependency}, err
	}
	objects, err := builder.ForResourceSet(obj, groups)
	if err != nil {
		return ctrl.Result{}, r.failed(obj, rsv1.BuildFailedReason, reconcile.TerminalError(fmt.Errorf("build failed: %w", err)))
	}
	revision, err := apply.Revision(objects)
	if err != nil {
		return ctrl.Result{}, r.failed(obj, rsv1.BuildFailedReason, reconcile.TerminalError(err))
	}
	if !open && revision != obj.Status.LastAppliedRevision {
		// Closed gates hold what is new, not the correction of drift: the last applied objects
		// are applied again. They are known in memory only: after a restart nothing is applied
		// until the gates open.
		lastRevision, lastObjects, known := r.applied.LastApplied(client.ObjectKeyFromObject(obj))
		if !known || lastRevision != obj.Status.LastAppliedRevision {
			log.FromContext(ctx).Info("gates closed: the new build waits, the last applied objects are not known since the controller started")
			if prior != nil {
				conditions.Set(obj, prior)
			}
			return ctrl.Result{RequeueAfter: interval}, nil
		}
		objects, revision = lastObjects, lastRevision
	}
	if err := r.reconcileObjects(ctx, obj, objects, revision, start); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}

// failed records a failure as Ready=False with reason and a Warning event, and returns err.
func (r *ResourceSetReconciler) failed(obj *rsv1.ResourceSet, reason string, err error) error {
	msg := userMessage(err)
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	return err
}

// waitingFor records that the ResourceSet waits (Ready=False, no error: the requeue retries).
func (r *ResourceSetReconciler) waitingFor(ctx context.Context, obj *rsv1.ResourceSet, reason, msg string) {
	if c := conditions.Get(obj, meta.ReadyCondition); c == nil || c.Message != msg {
		r.EventRecorder.Event(obj, corev1.EventTypeNormal, reason, msg)
	}
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", msg)
	log.FromContext(ctx).Info(msg)
}

// errNoAccount says the ResourceSet's account does not exist, with what to do.
var errNoAccount = errors.New("does not exist: create it or set spec.serviceAccountName")
