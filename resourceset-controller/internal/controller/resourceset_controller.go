package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/jitter"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	sharedinventory "github.com/sluice-gitops/sluice/shared/inventory"
	"github.com/sluice-gitops/sluice/shared/owner"
	"github.com/sluice-gitops/sluice/shared/sharding"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/builder"
	"github.com/sluice-gitops/sluice/shared/dependency"
)

// ControllerName is the field manager, event source and metrics name of the controller.
const ControllerName = "resourceset-controller"

// ownerGroup prefixes the labels that tie applied objects to their ResourceSet
// (resourceset.fluxcd.controlplane.io/name and /namespace).
const ownerGroup = "resourceset.fluxcd.controlplane.io"

// ResourceSetReconciler renders ResourceSets and applies the objects with server-side apply, as
// the ResourceSet's account, keeping an inventory of what it applied, through the lifecycle
// every owner of applied objects shares (shared/owner).
type ResourceSetReconciler struct {
	client.Client
	// APIReader reads what must not come from the cache (ServiceAccounts).
	APIReader     client.Reader
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards *sharding.Shards
	// Clients act as the account of each ResourceSet (spec.serviceAccountName,
	// --default-service-account).
	Clients *impersonation.Clients
	// DefaultMaxPrune is --max-prune: spec.maxPrune of the ResourceSets that set none.
	DefaultMaxPrune *intstr.IntOrString
	// ControllerName is the field manager of applied objects.
	ControllerName string
	// RequeueDependency is how soon unmet dependencies are checked again (--requeue-dependency).
	RequeueDependency time.Duration
	// Dependencies caches compiled readyExpr programs.
	Dependencies *dependency.Cache
	// Metrics records the gotk_reconcile_condition gauges; nil records none.
	Metrics *conditiongauge.Gauges
	// ApplyConcurrency is the number of objects dry-run and applied at once.
	ApplyConcurrency int
	// InventoryLimit is the size of an inventory kept in the status (shared/inventory); 0 is
	// the default.
	InventoryLimit int

	once      sync.Once
	lifecycle *owner.Lifecycle[*rsv1.ResourceSet]
	// dependencyWatches release dependents when a dependency of any kind changes.
	dependencyWatches *dependencyWatches
}

// +kubebuilder:rbac:groups=fluxcd.controlplane.io,resources=resourcesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fluxcd.controlplane.io,resources=resourcesets/status;resourcesets/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;impersonate
// The controller applies arbitrary objects for ResourceSets without a service account.
// +kubebuilder:rbac:groups=*,resources=*,verbs=*

func (r *ResourceSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.owners().ReconcileRequest(ctx, req, &rsv1.ResourceSet{})
}

// owners is the lifecycle of ResourceSets, with this reconciler as its Kind.
func (r *ResourceSetReconciler) owners() *owner.Lifecycle[*rsv1.ResourceSet] {
	r.once.Do(func() {
		name := r.ControllerName
		if name == "" {
			name = ControllerName
		}
		r.lifecycle = &owner.Lifecycle[*rsv1.ResourceSet]{
			Kind: r, Client: r.Client, APIReader: r.APIReader, Clients: r.Clients, EventRecorder: r.EventRecorder,
			Metrics: r.Metrics, ControllerName: name, Finalizer: rsv1.Finalizer, OwnerGroup: ownerGroup,
			Annotations: apply.Annotations{Reconcile: rsv1.ReconcileAnnotation, Force: rsv1.ForceAnnotation, Prune: rsv1.PruneAnnotation},
			Concurrency: r.ApplyConcurrency, InventoryLimit: r.InventoryLimit,
		}
	})
	return r.lifecycle
}

// Fields are the status fields the lifecycle keeps.
func (r *ResourceSetReconciler) Fields(obj *rsv1.ResourceSet) owner.Fields {
	return owner.StatusFields[rsv1.ResourceInventory, rsv1.ResourceRef](&obj.Status.ObservedGeneration, &obj.Status.LastAppliedRevision, &obj.Status.Inventory)
}

// Settings: a ResourceSet always prunes, and is paused by its reconcile annotation.
func (r *ResourceSetReconciler) Settings(obj *rsv1.ResourceSet) owner.Settings {
	return owner.Settings{
		Suspended: obj.IsDisabled(), SuspendedMessage: "reconciliation is disabled by the annotation " + rsv1.ReconcileAnnotation,
		Interval: jitter.JitteredIntervalDuration(obj.GetInterval()), Deadline: obj.GetTimeout(), Timeout: obj.GetTimeout(),
		ServiceAccount: obj.Spec.ServiceAccountName, Prune: true, Wait: obj.Spec.Wait,
		Force: obj.GetAnnotations()[rsv1.ForceAnnotation] == rsv1.EnabledValue,
	}
}

// Plan collects the inputs, checks the dependencies and renders the objects; their revision
// is the digest of what was rendered.
func (r *ResourceSetReconciler) Plan(ctx context.Context, obj *rsv1.ResourceSet) (owner.Plan, error) {
	wait := &ctrl.Result{RequeueAfter: r.RequeueDependency}
	groups, waiting, guarded, err := r.collectInputs(ctx, obj)
	if err != nil || waiting {
		return owner.Plan{Done: wait}, err
	}
	if waiting, err := r.checkDependencies(ctx, obj); err != nil || waiting {
		return owner.Plan{Done: wait}, err
	}
	rendered, err := builder.RenderResourceSet(ctx, obj, groups)
	if err != nil {
		return owner.Plan{}, r.buildFailed(obj, err)
	}
	inventory, err := r.owners().Inventory(ctx, obj)
	if err != nil && !errors.Is(err, sharedinventory.ErrUnreadable) {
		return owner.Plan{}, err
	}
	rendered = keepLegacyPermuteIDs(ctx, obj, groups, rendered, inventory)
	objects := rendered.Objects
	partial := r.recordFailedInputs(obj, rendered.Failed)
	if err := r.recreateFailedJobs(ctx, obj, objects); err != nil {
		return owner.Plan{}, err
	}
	if waitMsg, err := r.resolveData(ctx, obj, objects); err != nil || waitMsg != "" {
		if errors.Is(err, errChecksumFrom) || errors.Is(err, errDataFrom) {
			return owner.Plan{}, r.buildFailed(obj, err)
		}
		if err != nil {
			return owner.Plan{}, err
		}
		r.owners().Waiting(ctx, obj, rsv1.DependencyNotReadyReason, waitMsg)
		return owner.Plan{Done: &ctrl.Result{RequeueAfter: r.RequeueDependency}}, nil
	}
	revision, err := apply.Revision(objects)
	if err != nil {
		return owner.Plan{}, r.owners().Failed(obj, rsv1.BuildFailedReason, reconcile.TerminalError(err))
	}
	msg, allowed, err := pruneLimit(obj, r.DefaultMaxPrune, inventory, objects, revision)
	if err != nil {
		return owner.Plan{}, r.owners().Failed(obj, rsv1.BuildFailedReason, reconcile.TerminalError(err))
	}
	if partial {
		// Nothing is pruned while inputs fail: what their objects were stays.
		msg, allowed, guarded = "", false, ""
	}
	if guarded != "" && msg == "" && !allowed && len(deletedOf(obj, inventory, objects)) > 0 {
		// minInputs tripped, and the inputs left would delete objects: their set goes to the
		// gate of spec.deletionApproval, as a deletion beyond spec.maxPrune does.
		msg = guarded
	}
	approvedDeletion := false
	switch {
	case msg != "" && obj.Spec.DeletionApproval != nil:
		verdict, err := r.deletionApproval(ctx, obj, deletedOf(obj, inventory, objects), msg)
		if err != nil {
			return owner.Plan{}, err
		}
		if !verdict.Approved {
			// The gate's changes wake the ResourceSet up (resourceset_manager.go).
			r.owners().Waiting(ctx, obj, verdict.Reason, verdict.Message)
			return owner.Plan{Done: &ctrl.Result{RequeueAfter: r.Settings(obj).Interval}}, nil
		}
		approvedDeletion = true
	case msg != "":
		r.owners().Waiting(ctx, obj, rsv1.PruneLimitExceededReason, msg)
		return owner.Plan{Done: &ctrl.Result{RequeueAfter: r.Settings(obj).Interval}}, nil
	case !allowed:
		// Within the limit: no set waits any more (the inputs came back, say).
		obj.Status.PendingDeletion = nil
	}
	metadata := map[string]string{"inputs": strconv.Itoa(rendered.Inputs), "resources": strconv.Itoa(len(objects))}
	var steps []owner.Step
	for _, st := range rendered.Steps {
		steps = append(steps, owner.Step{Name: st.Name, Size: st.Size, Timeout: st.Timeout})
	}
	if len(steps) > 0 {
		metadata["steps"] = strconv.Itoa(len(steps))
	}
	var applied func()
	switch {
	case allowed:
		applied = func() { r.useAllowPrune(ctx, obj) }
	case approvedDeletion:
		applied = func() { obj.Status.PendingDeletion = nil }
	}
	plan := owner.Plan{
		Revision: revision,
		Build:    func(context.Context) ([]*unstructured.Unstructured, error) { return objects, nil },
		Applied:  applied,
		Metadata: metadata,
		Steps:    steps,
		Partial:  partial,
	}
	if obj.Spec.IsolateInputFailures {
		plan.Isolate = r.isolateRefused(ctx, obj, groups, rendered)
	}
	return plan, nil
}

// Succeeded: Ready and the event say how long the reconcile took, as flux-operator's.
func (r *ResourceSetReconciler) Succeeded(obj *rsv1.ResourceSet, _ string, took time.Duration) (string, string) {
	msg := fmt.Sprintf("Reconciliation finished in %s", apply.FmtDuration(took))
	if n := len(obj.Status.FailedInputs); n > 0 {
		msg += fmt.Sprintf("; %d of the inputs failed and were left out, their objects kept, nothing pruned (status.failedInputs): %s",
			n, obj.Status.FailedInputs[0].Message)
		if n > 1 {
			msg += fmt.Sprintf("; and %d more", n-1)
		}
	}
	return msg, msg
}
