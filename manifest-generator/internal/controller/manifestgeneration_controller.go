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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/status"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/build"
)

// ControllerName is the field manager, event source and metrics name of the controller.
const ControllerName = "manifest-generator"

// Annotations on generated objects, as kustomize-controller's but in this API group:
// reconcile: disabled leaves an object in the cluster alone, prune: disabled keeps it when it
// leaves the output, force: enabled recreates it on an immutable change.
const (
	ReconcileAnnotation = "generator.toolkit.fluxcd.io/reconcile"
	PruneAnnotation     = "generator.toolkit.fluxcd.io/prune"
	ForceAnnotation     = "generator.toolkit.fluxcd.io/force"
	// ownerGroup prefixes the labels tying an applied object to its ManifestGeneration.
	ownerGroup = "generator.toolkit.fluxcd.io"
)

// ManifestGenerationReconciler generates the manifests of a target path of a source artifact
// (.flux.yaml generators, or raw YAML) and applies them as the object's account.
type ManifestGenerationReconciler struct {
	client.Client
	// APIReader reads ServiceAccounts uncached.
	APIReader     client.Reader
	EventRecorder kuberecorder.EventRecorder
	Clients       *impersonation.Clients
	Builder       *build.Builder
	// RequeueDependency is how soon a generation whose source has no artifact is retried.
	RequeueDependency time.Duration
	ApplyConcurrency  int
	Metrics           *runtimectrl.Metrics

	applied apply.Memory
}

// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestgenerations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestgenerations/status;manifestgenerations/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;impersonate
// The controller applies arbitrary objects for ManifestGenerations without a service account.
// +kubebuilder:rbac:groups=*,resources=*,verbs=*

func (r *ManifestGenerationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	obj := &generatorv1.ManifestGeneration{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.applied.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := status.NewPatcher(obj, r.Client)
	defer func() {
		retErr = status.Finalize(ctx, patcher, obj, &obj.Status.ObservedGeneration, retErr, r.Metrics, ControllerName)
	}()
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, obj)
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.Status.SetLastHandledReconcileRequest(v)
	}
	if obj.Spec.Suspend {
		log.FromContext(ctx).Info("reconciliation is suspended for this object")
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(obj, generatorv1.Finalizer)
	var prior *metav1.Condition
	if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
		prior = c.DeepCopy()
	}
	if obj.Generation != obj.Status.ObservedGeneration {
		if err := status.Progressing(ctx, patcher, obj, ControllerName); err != nil {
			return ctrl.Result{}, err
		}
	}
	interval := jitter.JitteredIntervalDuration(obj.GetInterval())
	sctx, cancel := context.WithTimeout(ctx, r.Builder.Timeout(obj.Spec)+time.Minute)
	defer cancel()
	return r.reconcile(sctx, obj, start, interval, prior)
}

// reconcile runs the steps: gates, source, build, apply (with prune and health checks).
func (r *ManifestGenerationReconciler) reconcile(ctx context.Context, obj *generatorv1.ManifestGeneration, start time.Time,
	interval time.Duration, prior *metav1.Condition) (ctrl.Result, error) {
	open, err := r.reconcileGates(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	art, waitMsg, err := r.sourceArtifact(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waitMsg != "" {
		conditions.MarkFalse(obj, meta.ReadyCondition, generatorv1.ArtifactFailedReason, "%s", waitMsg)
		return ctrl.Result{RequeueAfter: r.RequeueDependency}, nil
	}
	if !open && art.Revision != obj.Status.LastAppliedRevision {
		// Closed gates hold the new revision; what was applied is still corrected (known in
		// memory only: after a restart nothing is applied until the gates open).
		lastRevision, lastObjects, known := r.applied.LastApplied(client.ObjectKeyFromObject(obj))
		if !known || lastRevision != obj.Status.LastAppliedRevision {
			if prior != nil {
				conditions.Set(obj, prior)
			}
			return ctrl.Result{RequeueAfter: interval}, nil
		}
		return ctrl.Result{RequeueAfter: interval}, r.applyObjects(ctx, obj, lastObjects, lastRevision, obj.Status.ConfigFile, start)
	}
	obj.Status.LastAttemptedRevision = art.Revision
	res, err := r.Builder.Build(ctx, art, obj.Spec)
	if err != nil {
		if build.IsTerminal(err) {
			err = reconcile.TerminalError(err)
		}
		return ctrl.Result{}, r.failed(obj, generatorv1.BuildFailedReason, err)
	}
	if !res.FromCache {
		for _, id := range res.Dropped {
			r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, "PatchEntryDropped",
				"the patch file has an entry for %s, which the generators no longer produce: it is ignored", id)
		}
	}
	if err := r.applyObjects(ctx, obj, res.Objects, art.Revision, res.ConfigFile, start); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}

// applyObjects applies the generated objects, prunes what left the output (spec.prune) and
// waits for health (spec.wait).
func (r *ManifestGenerationReconciler) applyObjects(ctx context.Context, obj *generatorv1.ManifestGeneration,
	objects []*unstructured.Unstructured, revision, configFile string, start time.Time) error {
	cl, err := r.clientFor(ctx, obj)
	if err != nil {
		return err
	}
	applier := r.applier(cl)
	res, err := applier.Apply(ctx, apply.Request{
		Owner: client.ObjectKeyFromObject(obj), Revision: revision, Objects: objects,
		Inventory: entries(obj.Status.Inventory), Prune: obj.GetPrune(), Wait: obj.Spec.Wait, Timeout: r.Builder.Timeout(obj.Spec),
	})
	if res != nil && res.Inventory != nil {
		obj.Status.Inventory = inventoryOf(res.Inventory)
	}
	if res != nil && len(res.Pruned) > 0 {
		r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, "GarbageCollectionSucceeded", "%s\nGarbage collection finished in %s",
			joinLines(res.Pruned), apply.FmtDuration(res.PruneDuration))
	}
	switch {
	case errors.Is(err, apply.ErrHealth):
		obj.Status.LastAppliedRevision = revision
		return r.failed(obj, generatorv1.HealthCheckFailedReason, err)
	case errors.Is(err, apply.ErrPrune):
		return r.failed(obj, generatorv1.PruneFailedReason, err)
	case err != nil:
		return r.failed(obj, generatorv1.ReconciliationFailedReason, err)
	}
	changed := obj.Status.LastAppliedRevision != revision
	obj.Status.LastAppliedRevision = revision
	obj.Status.ConfigFile = configFile
	if res.Changes != "" {
		r.EventRecorder.AnnotatedEventf(obj, map[string]string{"revision": revision}, corev1.EventTypeNormal, generatorv1.ApplySucceededReason, "%s", res.Changes)
		changed = true
	}
	msg := fmt.Sprintf("Applied revision: %s", revision)
	if c := conditions.Get(obj, meta.ReadyCondition); changed || c == nil || c.Status != metav1.ConditionTrue {
		r.EventRecorder.AnnotatedEventf(obj, map[string]string{"revision": revision}, corev1.EventTypeNormal,
			generatorv1.ReconciliationSucceededReason, "Reconciliation finished in %s, next run in %s", apply.FmtDuration(time.Since(start)), obj.GetInterval())
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, generatorv1.ReconciliationSucceededReason, "%s", msg)
	return nil
}

// failed records a failure as Ready=False with reason and a Warning event, and returns err.
func (r *ManifestGenerationReconciler) failed(obj *generatorv1.ManifestGeneration, reason string, err error) error {
	msg := status.UserMessage(err)
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	return err
}
