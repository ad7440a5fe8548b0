// Package owner is the reconcile lifecycle of an object that applies a set of objects as an
// account and keeps their inventory: a ResourceSet, a ManifestGeneration. The lifecycle is the
// same for both and lives here once: the start and the finish every reconciler shares
// (shared/status: the status patch and its conditions, deletion, the reconcile request echo, the
// finalizer, suspension), the garbage collection of a deleted owner, the gates (shared/gates)
// with the replay of the last applied objects while they are closed, the account, the apply with
// prune and health checks (shared/apply), and the events. A kind plugs in through the narrow Kind
// interface: where its status fields are, its settings, and its own steps that say what to apply.
package owner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/eventmeta"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/inventory"
	"github.com/sluice-gitops/sluice/shared/status"
)

// Reasons of the events and conditions the lifecycle sets (Flux's, as kustomize-controller's).
const (
	ApplySucceededReason             = "ApplySucceeded"
	GarbageCollectionSucceededReason = "GarbageCollectionSucceeded"
)

// Object is what the lifecycle needs of an owner's API type.
type Object interface {
	status.Object
	gates.HeldObject
	GetRequestStatus() *meta.ReconcileRequestStatus
}

// Fields point into the status of one owner: the fields the lifecycle keeps. API types do not
// import this package, so each kind says where its fields are.
type Fields struct {
	ObservedGeneration  *int64
	LastAppliedRevision *string
	// Inventory reads the status inventory; SetInventory writes it.
	Inventory    func() []apply.Entry
	SetInventory func([]apply.Entry)
}

// Settings are an owner's spec as the lifecycle reads it.
type Settings struct {
	// Suspended pauses the owner (spec.suspend, or an annotation); SuspendedMessage is logged.
	Suspended        bool
	SuspendedMessage string
	// Interval is the jittered requeue interval of a successful reconcile.
	Interval time.Duration
	// Deadline bounds the kind's steps and the apply (not the final status patch).
	Deadline time.Duration
	// Timeout bounds the apply and its health checks.
	Timeout time.Duration
	// ServiceAccount is spec.serviceAccountName ("" for the default).
	ServiceAccount string
	// Prune garbage-collects what left the set, also when the owner is deleted.
	Prune bool
	// Wait runs the health checks of the applied objects.
	Wait bool
	// Force recreates every object with an immutable change.
	Force bool

	// partial is the plan's Partial, for apply.
	partial bool
}

// Plan is what a kind's own steps decided.
type Plan struct {
	// Done ends the reconcile with this result: the kind is waiting (for inputs, a dependency,
	// a source) and said so in Ready.
	Done *ctrl.Result
	// Revision of what would be applied.
	Revision string
	// Build returns the objects of Revision. It is called only when they are to be applied:
	// while closed gates hold a new revision, nothing is built.
	Build func(ctx context.Context) ([]*unstructured.Unstructured, error)
	// Applied, when set, runs after the objects were applied (extra status fields).
	Applied func()
	// Metadata describes what was planned (e.g. the number of inputs), for a Historian.
	Metadata map[string]string
	// Steps, when there are several, split the built objects (in order) into steps applied one
	// after another (applySteps).
	Steps []Step
	// Partial: the objects are part of what the owner generates (some inputs failed): they are
	// applied, the inventory keeps what it had, and nothing is pruned.
	Partial bool
	// Isolate, when set, is given an apply that failed (apply.ErrApply): it may leave out what
	// the refused objects came from (a ResourceSet's inputs) and return the objects to apply
	// instead, with their revision; the apply is tried again, partial. False: the failure stands.
	Isolate func(err error) (objects []*unstructured.Unstructured, revision string, ok bool)
}

// maxIsolations bounds the applies tried again after Plan.Isolate left something out.
const maxIsolations = 16

// Historian is implemented by kinds that keep a history of their reconciliations
// (flux-operator's status.history). Record is called at the end of each reconcile that built and
// applied, or failed to build: digest is the revision applied (empty when the build failed),
// reason that of the Ready condition it ended with, metadata what the plan said.
type Historian[T Object] interface {
	Record(obj T, digest, reason string, took time.Duration, metadata map[string]string)
}

// Kind is what a reconciler of one kind of owner gives the lifecycle.
type Kind[T Object] interface {
	// Fields of obj's status that the lifecycle keeps.
	Fields(obj T) Fields
	// Settings of obj.
	Settings(obj T) Settings
	// Plan runs the kind's own steps (inputs and dependencies, the source artifact).
	Plan(ctx context.Context, obj T) (Plan, error)
	// Succeeded is the Ready message and the event message of a successful apply.
	Succeeded(obj T, revision string, took time.Duration) (ready, event string)
}

// Lifecycle reconciles the owners of one kind. It is safe for concurrent use.
type Lifecycle[T Object] struct {
	Kind Kind[T]
	// Client reads the gates; APIReader reads ServiceAccounts uncached.
	Client    client.Client
	APIReader client.Reader
	// Clients are the accounts the owners apply as.
	Clients       *impersonation.Clients
	EventRecorder kuberecorder.EventRecorder
	// Metrics records the gotk_reconcile_condition gauges; nil records none.
	Metrics *conditiongauge.Gauges
	// ControllerName is the field manager of the applies and the status.
	ControllerName string
	// Finalizer of the owners.
	Finalizer string
	// OwnerGroup prefixes the labels tying applied objects to their owner.
	OwnerGroup  string
	Annotations apply.Annotations
	// Concurrency of dry-runs and applies.
	Concurrency int
	// InventoryLimit is the size of the inventory (as JSON) kept in the status; past it, the
	// entries go into ConfigMaps beside the owner (shared/inventory). 0 is its DefaultLimit.
	InventoryLimit int

	memory    apply.Memory
	storeOnce sync.Once
	store     *inventory.Store
}

// Forget drops what is remembered of an owner that is gone.
func (l *Lifecycle[T]) Forget(key types.NamespacedName) {
	l.memory.Forget(key)
	l.inventoryStore().Forget(key)
}

// ReconcileRequest reads the owner of req into obj (an empty object of the kind) and reconciles
// it; an owner that is gone is forgotten.
func (l *Lifecycle[T]) ReconcileRequest(ctx context.Context, req ctrl.Request, obj T) (ctrl.Result, error) {
	if err := l.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			l.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return l.Reconcile(ctx, obj)
}

// Reconcile runs the lifecycle for obj, just read from the API: the start and the finish every
// reconciler shares (shared/status: Begin, Preamble, Finish), then the owner's steps.
func (l *Lifecycle[T]) Reconcile(ctx context.Context, obj T) (result ctrl.Result, retErr error) {
	start := time.Now()
	fields, settings := l.Kind.Fields(obj), l.Kind.Settings(obj)
	finisher := status.Finisher{Client: l.Client, Metrics: l.Metrics, FieldOwner: l.ControllerName}
	rec := finisher.Begin(ctx, obj, status.Fields{
		ObservedGeneration: fields.ObservedGeneration, LastHandledReconcileAt: &obj.GetRequestStatus().LastHandledReconcileAt,
	})
	// The inventory is read whole and written once, before the status patch; the chunks it
	// replaces go once the patch is written.
	inv, err := l.loadInventory(ctx, obj, fields)
	if inv != nil {
		fields = inv.fields
		defer func() { inv.collect(ctx, obj, rec.Written()) }()
	}
	defer rec.Finish(&retErr)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() { retErr = errors.Join(retErr, inv.flush(ctx, obj)) }()
	// Ready before the preamble says a new spec is in progress: restored when closed gates hold
	// the new revision back (see reconcile).
	var prior *metav1.Condition
	if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
		prior = c.DeepCopy()
	}
	if done, err := rec.Preamble(status.Preamble{
		Finalizer: l.Finalizer, Cleanup: func() error { return l.reconcileDelete(ctx, obj, fields, settings) },
		Suspended: settings.Suspended, SuspendedMessage: settings.SuspendedMessage,
	}); done {
		return ctrl.Result{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, settings.Deadline)
	defer cancel()
	var out outcome
	result, err = l.reconcile(sctx, obj, fields, settings, start, prior, &out)
	if h, ok := l.Kind.(Historian[T]); ok {
		reason := ""
		if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
			reason = c.Reason
		}
		if out.applied != "" || reason == meta.BuildFailedReason {
			h.Record(obj, out.applied, reason, time.Since(start), out.metadata)
		}
	}
	return result, err
}

// outcome is what a reconcile did, for a Historian: the revision it applied (or tried to), and
// the plan's metadata.
type outcome struct {
	applied  string
	metadata map[string]string
}

// reconcile runs the steps: gates, the kind's plan, build, apply (with prune and health
// checks). prior is the Ready condition before this reconcile, restored when closed gates hold
// a new revision back and nothing is applied (what was applied is still what Ready described).
func (l *Lifecycle[T]) reconcile(ctx context.Context, obj T, fields Fields, settings Settings, start time.Time,
	prior *metav1.Condition, out *outcome) (ctrl.Result, error) {
	lastApplied := *fields.LastAppliedRevision
	// The gates are read before the plan, and recorded before it too (the plan's own Ready, e.g.
	// waiting for a source, wins over GateClosed) unless a gate opened for one revision only (an
	// approval of that revision) lets them go: then whether they hold the owner depends on the
	// plan's revision, and they are recorded once it is known.
	holder := gates.Holder{Reader: l.Client, EventRecorder: l.EventRecorder}
	eval, err := holder.Evaluate(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	byRevision := eval.Open && eval.RevisionScoped()
	open := true
	if !byRevision {
		open = holder.Record(ctx, obj, eval, lastApplied == "")
	}
	plan, err := l.Kind.Plan(ctx, obj)
	if err != nil || plan.Done != nil {
		if byRevision {
			// No revision to apply: nothing new waits, the gates let the owner go.
			holder.Record(ctx, obj, eval, lastApplied == "")
		}
		if plan.Done != nil {
			return *plan.Done, err
		}
		return ctrl.Result{}, err
	}
	revision, build, applied := plan.Revision, plan.Build, plan.Applied
	waiting := ""
	if revision != lastApplied {
		waiting = revision
	}
	if byRevision {
		open = holder.Record(ctx, obj, eval.ForRevision(waiting), lastApplied == "")
	}
	gates.Waiting(obj, waiting)
	replayed := false
	if !open && revision != lastApplied {
		// Closed gates hold what is new, not the correction of drift: the last applied objects
		// are applied again. They are known in memory only: after a restart nothing is applied
		// until the gates open.
		rev, objects, known := l.memory.LastApplied(client.ObjectKeyFromObject(obj))
		if !known || rev != lastApplied {
			log.FromContext(ctx).Info("gates closed: the new revision waits; the last applied objects are not known since the controller started")
			if prior != nil {
				conditions.Set(obj, prior)
			}
			gates.MarkHeldReady(obj)
			return ctrl.Result{RequeueAfter: settings.Interval}, nil
		}
		revision, applied, replayed = rev, nil, true
		build = func(context.Context) ([]*unstructured.Unstructured, error) { return objects, nil }
	}
	objects, err := build(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if guard, ok := l.Kind.(BuildGuard[T]); ok && !replayed {
		inv, err := l.Inventory(ctx, obj)
		if err != nil && !errors.Is(err, inventory.ErrUnreadable) {
			return ctrl.Result{}, err
		}
		held, err := guard.Guard(ctx, obj, inv, objects, revision)
		if err != nil {
			return ctrl.Result{}, err
		}
		if held != nil {
			l.Waiting(ctx, obj, held.Reason, held.Message)
			return ctrl.Result{RequeueAfter: settings.Interval}, nil
		}
	}
	out.applied, out.metadata = revision, plan.Metadata
	if !replayed {
		// The plan's own build, not the last applied objects re-applied behind closed gates.
		final, err := l.applySteps(ctx, obj, fields, settings, objects, revision, plan.Steps)
		if err != nil {
			return ctrl.Result{}, err
		}
		if final > 0 {
			settings.Timeout = final
		}
	}
	settings.partial = plan.Partial && !replayed
	for tries := 0; ; tries++ {
		err := l.apply(ctx, obj, fields, settings, objects, revision, start)
		if err == nil {
			break
		}
		if plan.Isolate == nil || replayed || tries >= maxIsolations || !errors.Is(err, apply.ErrApply) {
			return ctrl.Result{}, err
		}
		next, rev, ok := plan.Isolate(err)
		if !ok {
			return ctrl.Result{}, err
		}
		objects, revision, settings.partial = next, rev, true
		out.applied = revision
	}
	if applied != nil {
		applied()
	}
	gates.MarkHeldReady(obj)
	return ctrl.Result{RequeueAfter: settings.Interval}, nil
}

// apply applies the objects as the owner's account (CRDs and Namespaces first, the rest
// concurrently), records the inventory, prunes what left it and runs the health checks.
func (l *Lifecycle[T]) apply(ctx context.Context, obj T, fields Fields, settings Settings,
	objects []*unstructured.Unstructured, revision string, start time.Time) error {
	cl, err := l.clientFor(ctx, obj, settings)
	if err != nil {
		return err
	}
	res, err := l.applier(cl).Apply(ctx, apply.Request{
		Owner: client.ObjectKeyFromObject(obj), Revision: revision, Objects: objects,
		Inventory: fields.Inventory(), Prune: settings.Prune, Partial: settings.partial, Wait: settings.Wait, Timeout: settings.Timeout, Force: settings.Force,
	})
	if res != nil && res.Inventory != nil {
		fields.SetInventory(res.Inventory)
	}
	if res != nil {
		l.prunedEvent(obj, res.Pruned, res.PruneDuration)
	}
	switch {
	case errors.Is(err, apply.ErrHealth):
		// Applied, not healthy: the revision is the applied one.
		*fields.LastAppliedRevision = revision
		return l.Failed(obj, meta.HealthCheckFailedReason, fmt.Errorf("health check failed after %s: %w", apply.FmtDuration(time.Since(start)), err))
	case errors.Is(err, apply.ErrPrune):
		return l.Failed(obj, meta.PruneFailedReason, err)
	case err != nil:
		return l.Failed(obj, meta.ReconciliationFailedReason, err)
	}
	changed := *fields.LastAppliedRevision != revision || len(res.Pruned) > 0
	*fields.LastAppliedRevision = revision
	annotations := eventmeta.RevisionOf(l.Client.Scheme(), obj, revision)
	if res.Changes != "" {
		l.EventRecorder.AnnotatedEventf(obj, annotations, corev1.EventTypeNormal, ApplySucceededReason, "%s", res.Changes)
		changed = true
	}
	ready, event := l.Kind.Succeeded(obj, revision, time.Since(start))
	if c := conditions.Get(obj, meta.ReadyCondition); changed || c == nil || c.Status != metav1.ConditionTrue {
		l.EventRecorder.AnnotatedEventf(obj, annotations, corev1.EventTypeNormal, meta.ReconciliationSucceededReason, "%s", event)
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.ReconciliationSucceededReason, "%s", ready)
	return nil
}

// Failed records a failure as Ready=False with reason and a Warning event, and returns err.
func (l *Lifecycle[T]) Failed(obj T, reason string, err error) error {
	msg := status.UserMessage(err)
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", msg)
	l.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	return err
}

// Waiting records that the owner waits (Ready=False with reason, no error: the requeue
// retries), with an event when the message is new.
func (l *Lifecycle[T]) Waiting(ctx context.Context, obj T, reason, msg string) {
	if c := conditions.Get(obj, meta.ReadyCondition); c == nil || c.Message != msg {
		l.EventRecorder.Event(obj, corev1.EventTypeNormal, reason, msg)
	}
	conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", msg)
	log.FromContext(ctx).Info(msg)
}

// ClientFor is the client of the owner's account (the kind's steps read dependencies with it).
// An account that does not exist is said so, as a failure: impersonating it would only give
// "forbidden".
func (l *Lifecycle[T]) ClientFor(ctx context.Context, obj T) (impersonation.Client, error) {
	return l.clientFor(ctx, obj, l.Kind.Settings(obj))
}

func (l *Lifecycle[T]) clientFor(ctx context.Context, obj T, settings Settings) (impersonation.Client, error) {
	if sa := l.Clients.ServiceAccount(obj.GetNamespace(), settings.ServiceAccount); sa != "" {
		err := l.APIReader.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: sa}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return impersonation.Client{}, l.Failed(obj, meta.ReconciliationFailedReason,
				fmt.Errorf("ServiceAccount '%s/%s' does not exist: create it or set spec.serviceAccountName", obj.GetNamespace(), sa))
		}
		if err != nil {
			return impersonation.Client{}, err
		}
	}
	return l.Clients.For(obj.GetNamespace(), settings.ServiceAccount)
}

// applier applies as one account, with the kind's annotations.
func (l *Lifecycle[T]) applier(cl impersonation.Client) *apply.Applier {
	return &apply.Applier{
		Client: cl, Mapper: l.Clients.Mapper, FieldManager: l.ControllerName, OwnerGroup: l.OwnerGroup,
		Concurrency: l.Concurrency, Memory: &l.memory, Annotations: l.Annotations,
	}
}

// reconcileDelete removes what the owner applied (when it prunes); the preamble then removes its
// finalizer. A suspended owner leaves its objects; so does one whose account is gone, with a
// warning, rather than block its deletion forever.
func (l *Lifecycle[T]) reconcileDelete(ctx context.Context, obj T, fields Fields, settings Settings) error {
	if inv := fields.Inventory(); settings.Prune && !settings.Suspended && len(inv) > 0 {
		cl, err := l.clientFor(ctx, obj, settings)
		if err != nil {
			l.EventRecorder.Eventf(obj, corev1.EventTypeWarning, meta.ReconciliationFailedReason,
				"the generated objects were left in place: %s", status.UserMessage(err))
		} else {
			start := time.Now()
			var pruned []string
			for _, group := range l.deletionGroups(ctx, obj, inv) {
				done, err := l.applier(cl).Delete(ctx, client.ObjectKeyFromObject(obj), group)
				pruned = append(pruned, done...)
				if err != nil {
					return fmt.Errorf("garbage collection: %w", err)
				}
			}
			l.prunedEvent(obj, pruned, time.Since(start))
		}
	}
	if inventory.Spilled(obj.GetNamespace(), l.Kind.Fields(obj).Inventory()) {
		if err := l.inventoryStore().Collect(ctx, obj, nil); err != nil {
			return fmt.Errorf("deleting the inventory's ConfigMaps: %w", err)
		}
	}
	l.Forget(client.ObjectKeyFromObject(obj))
	return nil
}

// prunedEvent lists the objects garbage collection removed and how long it took.
func (l *Lifecycle[T]) prunedEvent(obj T, pruned []string, took time.Duration) {
	if len(pruned) == 0 {
		return
	}
	l.EventRecorder.Eventf(obj, corev1.EventTypeNormal, GarbageCollectionSucceededReason, "%s\nGarbage collection finished in %s",
		strings.Join(pruned, "\n"), apply.FmtDuration(took))
}
