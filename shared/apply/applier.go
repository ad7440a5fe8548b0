// Package apply applies a set of objects for an owner (a ResourceSet, a ManifestGeneration) the
// way the Flux appliers do, with fluxcd/pkg/ssa: server-side apply in stages, an inventory,
// staged garbage collection, health checks; plus a memory of what was applied, so a no-op
// reconcile costs a LIST per kind and namespace instead of a dry-run per object, a LIST of
// names instead of a GET per object that does not exist yet (absent.go), and the applies of a
// stage are sent concurrently once all of its objects passed their dry-run (stages.go).
package apply

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/secrets"
)

// Annotation values.
const (
	Enabled  = "enabled"
	Disabled = "disabled"
)

// Annotations are the keys of the applier's annotations in an API family (e.g.
// fluxcd.controlplane.io/reconcile, /force, /prune).
type Annotations struct {
	// Reconcile: disabled on an object in the cluster leaves it unchanged.
	Reconcile string
	// Force: enabled on a generated object recreates it on an immutable change.
	Force string
	// Prune: disabled on a generated object keeps it when it leaves the set.
	Prune string
}

// DefaultConcurrency is the default of the controllers' --apply-concurrency: enough requests
// in flight to keep a local API server busy; the API server's priority and fairness, not the
// client, paces them.
const DefaultConcurrency = 10

// Applier applies objects as one account.
type Applier struct {
	Client impersonation.Client
	// Mapper tells namespaced kinds (their objects default to the owner's namespace).
	Mapper apimeta.RESTMapper
	// FieldManager of the applies; OwnerGroup prefixes the owner labels (<group>/name, /namespace).
	FieldManager, OwnerGroup string
	// Concurrency of dry-runs and applies.
	Concurrency int
	Annotations Annotations
	// Memory, when set, lets objects unchanged since the last apply skip their dry-run.
	Memory *Memory
}

// Request is one apply of an owner's objects.
type Request struct {
	Owner     types.NamespacedName
	Revision  string
	Objects   []*unstructured.Unstructured
	Inventory []Entry // what the owner applied before
	// Force recreates every object with an immutable change (not only those annotated).
	Force bool
	Prune bool
	// Partial: the objects are part of what the owner generates (inputs failed to render); the
	// new inventory keeps every entry of the old one, and nothing is pruned.
	Partial bool
	Wait    bool
	Timeout time.Duration
	// Step names the part of the owner's objects this apply holds, when the owner applies them
	// in ordered steps: each step's last apply is remembered apart from the owner's whole one.
	Step string
}

// Result is what an apply did.
type Result struct {
	// Inventory is the new inventory; after a failed apply, the old one plus what was applied.
	Inventory []Entry
	ChangeSet *ssa.ChangeSet
	// Changes lists created/configured objects, one "Kind/ns/name action" line each.
	Changes string
	// Pruned lists deleted objects ("Kind/ns/name deleted"), PruneDuration how long it took.
	Pruned        []string
	PruneDuration time.Duration
}

// Failure stages of Apply, to tell users which step failed (errors.Is).
var (
	ErrApply  = errors.New("apply failed")
	ErrPrune  = errors.New("garbage collection failed")
	ErrHealth = errors.New("health check failed")
)

// stageError is a failure of a stage: errors.Is finds the stage, the text is the cause's.
type stageError struct{ stage, err error }

func (e *stageError) Error() string   { return e.err.Error() }
func (e *stageError) Unwrap() []error { return []error{e.stage, e.err} }

func failed(stage, err error) error { return &stageError{stage: stage, err: err} }

// Apply applies req.Objects (CRDs and Namespaces first), prunes what left the inventory when
// req.Prune, and waits for health when req.Wait. Errors wrap ErrApply, ErrPrune or ErrHealth.
func (a *Applier) Apply(ctx context.Context, req Request) (*Result, error) {
	rm := a.manager()
	a.defaultNamespaces(req.Objects, req.Owner.Namespace)
	rm.SetOwnerLabels(req.Objects, req.Owner.Name, req.Owner.Namespace)
	owner := rm.GetOwnerLabels(req.Owner.Name, req.Owner.Namespace)

	var live map[string]string
	memory := req.Owner
	if req.Step != "" {
		memory.Name += "/" + req.Step // no object name holds a '/'
	}
	state := a.Memory.get(memory)
	if state != nil {
		var err error
		if live, err = liveVersions(ctx, a.Client, req.Objects, owner); err != nil {
			log.FromContext(ctx).V(1).Info("listing the applied objects failed, dry-running them all", "error", err.Error())
			live = nil
		}
	}
	enc := encode(req.Objects)
	unchanged, toApply := unchangedSince(state, live, req.Objects, enc.digests)
	cs := ssa.NewChangeSet()
	res := &Result{ChangeSet: cs}
	if len(toApply) > 0 {
		// The GET before each dry-run is answered from a LIST for objects that do not exist yet;
		// in a first apply, their dry-run is skipped too (absent.go).
		absent := newAbsentClient(secrets.MaskingClient{Client: a.Client.Client}, toApply, len(req.Inventory) == 0)
		applied, err := a.applyStaged(ctx, absent, toApply, a.options(req))
		cs.Append(applied.Entries)
		if err != nil {
			a.Memory.Forget(memory)
			res.Inventory = Merge(req.Inventory, Entries(cs))
			return res, failed(ErrApply, err)
		}
	}
	cs.Append(unchanged)
	res.Inventory = Entries(cs)
	res.Changes = changes(cs)
	if req.Partial {
		res.Inventory = Merge(req.Inventory, res.Inventory)
	}

	if req.Prune && !req.Partial {
		stale, err := Stale(req.Inventory, res.Inventory)
		if err != nil {
			return res, failed(ErrPrune, err)
		}
		if len(stale) > 0 {
			start := time.Now()
			if res.Pruned, err = a.prune(ctx, rm, owner, stale); err != nil {
				res.Inventory = Merge(req.Inventory, res.Inventory)
				return res, failed(ErrPrune, err)
			}
			res.PruneDuration = time.Since(start)
		}
	}

	if len(toApply) > 0 {
		var err error
		if live, err = liveVersions(ctx, a.Client, req.Objects, owner); err != nil {
			live = nil
		}
	}
	if live != nil {
		a.Memory.set(memory, newAppliedState(req.Revision, enc, live))
	} else {
		a.Memory.Forget(memory)
	}

	if req.Wait && len(cs.Entries) > 0 {
		// The request's timeout, or what is left of ctx when that is sooner.
		waitOpts := ssa.WaitOptions{Interval: 2 * time.Second, Timeout: req.Timeout, FailFast: true}
		if deadline, ok := ctx.Deadline(); ok && (waitOpts.Timeout <= 0 || time.Until(deadline) < waitOpts.Timeout) {
			waitOpts.Timeout = time.Until(deadline)
		}
		if err := rm.WaitForSetWithContext(ctx, cs.ToObjMetadataSet(), waitOpts); err != nil {
			return res, failed(ErrHealth, err)
		}
	}
	return res, nil
}

// Delete removes everything in an inventory (the owner is being deleted), in stages.
func (a *Applier) Delete(ctx context.Context, owner types.NamespacedName, inventory []Entry) ([]string, error) {
	a.Memory.Forget(owner)
	stale, err := Stale(inventory, nil)
	if err != nil || len(stale) == 0 {
		return nil, err
	}
	rm := a.manager()
	return a.prune(ctx, rm, rm.GetOwnerLabels(owner.Name, owner.Namespace), stale)
}

func (a *Applier) manager() *ssa.ResourceManager {
	return a.managerFor(secrets.MaskingClient{Client: a.Client.Client})
}

// managerFor is a resource manager that makes its requests with c. The clients under it mask
// the values of a Secret in the API server's errors (secrets.MaskingClient): the API server
// quotes what it could not decode, and those errors become conditions, events and log lines.
func (a *Applier) managerFor(c client.Client) *ssa.ResourceManager {
	rm := ssa.NewResourceManager(c, a.Client.Poller, ssa.Owner{Field: a.FieldManager, Group: a.OwnerGroup})
	if a.Concurrency > 0 {
		rm.SetConcurrency(a.Concurrency)
	}
	return rm
}

// options: force (all, or annotated objects), objects disabled in the cluster left alone, and
// kubectl's leftovers (last-applied annotation, its field managers) removed so objects first
// created by hand are fully taken over.
func (a *Applier) options(req Request) ssa.ApplyOptions {
	opts := ssa.DefaultApplyOptions()
	opts.Force = req.Force
	opts.ForceSelector = map[string]string{a.Annotations.Force: Enabled}
	opts.WaitTimeout = req.Timeout
	opts.ExclusionSelector = map[string]string{a.Annotations.Reconcile: Disabled}
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations: []string{corev1.LastAppliedConfigAnnotation},
		FieldManagers: []ssa.FieldManager{
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationApply},
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "before-first-apply", OperationType: metav1.ManagedFieldsOperationUpdate},
		},
		Exclusions: map[string]string{a.Annotations.Reconcile: Disabled},
	}
	return opts
}

// defaultNamespaces puts namespaced objects without a namespace in the owner's, as `kubectl
// apply -n` would; a kind the cluster does not know yet is left for the apply to report.
func (a *Applier) defaultNamespaces(objects []*unstructured.Unstructured, namespace string) {
	for _, o := range objects {
		if o.GetNamespace() != "" {
			continue
		}
		gvk := o.GroupVersionKind()
		m, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil && m.Scope.Name() == apimeta.RESTScopeNameNamespace {
			o.SetNamespace(namespace)
		}
	}
}

// changes lists the objects created, configured or deleted, one per line
// ("HelmRelease/default/podinfo-team1 created"), "" when nothing changed.
func changes(cs *ssa.ChangeSet) string {
	var lines []string
	for _, e := range cs.Entries {
		if e.Action != ssa.UnchangedAction && e.Action != ssa.SkippedAction {
			lines = append(lines, e.String())
		}
	}
	return strings.Join(lines, "\n")
}

// FmtDuration rounds to what a person reads: 52s, 1.2s, 350ms.
func FmtDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}
