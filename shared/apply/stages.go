package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyStaged is ssa's ApplyAllStaged (cluster definitions, then class definitions, then the
// rest, waiting for the definitions to be ready), except that the applies of a stage are sent
// concurrently. ssa dry-runs a stage's objects concurrently, then applies them one by one, so a
// first apply of N objects costs N apply round trips in a row. Here ssa still does everything up
// to the applies, so every object of a stage is dry-run before any is applied (a stage with an
// invalid object applies nothing); the applies it asks for are deferred (deferredApplies) and
// sent by a.Concurrency workers.
func (a *Applier) applyStaged(ctx context.Context, c client.Client, objects []*unstructured.Unstructured, opts ssa.ApplyOptions) (*ssa.ChangeSet, error) {
	var defs, classes, custom, rest []*unstructured.Unstructured
	for _, o := range objects {
		switch {
		case utils.IsClusterDefinition(o):
			defs = append(defs, o)
		case utils.IsClassDefinition(o):
			classes = append(classes, o)
		case utils.IsCustomStage(o, opts.CustomStageKinds):
			custom = append(custom, o)
		default:
			rest = append(rest, o)
		}
	}
	changeSet := ssa.NewChangeSet()
	for _, stage := range []struct {
		objects []*unstructured.Unstructured
		wait    bool
	}{{defs, true}, {classes, true}, {custom, false}, {rest, false}} {
		if len(stage.objects) == 0 {
			continue
		}
		deferred := &deferredApplies{Client: c}
		rm := a.managerFor(deferred)
		cs, err := rm.ApplyAll(ctx, stage.objects, opts)
		if err != nil {
			return changeSet, err
		}
		sent, err := deferred.send(ctx, a.concurrency())
		changeSet.Append(appliedEntries(cs.Entries, sent))
		if err != nil {
			return changeSet, err
		}
		if stage.wait {
			if err := rm.WaitForSet(cs.ToObjMetadataSet(), ssa.WaitOptions{Interval: opts.WaitInterval, Timeout: opts.WaitTimeout}); err != nil {
				return changeSet, err
			}
		}
	}
	return changeSet, nil
}

func (a *Applier) concurrency() int {
	if a.Concurrency > 0 {
		return a.Concurrency
	}
	return 1
}

// deferredApplies records the applies (server-side apply patches that are not dry-runs) instead
// of sending them; every other request goes through.
type deferredApplies struct {
	client.Client
	mu      sync.Mutex
	pending []deferredApply
}

type deferredApply struct {
	object *unstructured.Unstructured
	opts   []client.PatchOption
}

func (d *deferredApplies) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || patch.Type() != types.ApplyPatchType || isDryRun(opts) {
		return d.Client.Patch(ctx, obj, patch, opts...)
	}
	d.mu.Lock()
	d.pending = append(d.pending, deferredApply{object: u, opts: opts})
	d.mu.Unlock()
	return nil
}

func isDryRun(opts []client.PatchOption) bool {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	return len(po.DryRun) > 0
}

// send applies what was recorded, n at a time, and returns the keys of the objects applied. On
// the first failure no more applies start; the error names the object, as ssa's does.
func (d *deferredApplies) send(ctx context.Context, n int) (map[objectKey]bool, error) {
	var mu sync.Mutex
	sent := map[objectKey]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for _, p := range d.pending {
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // an earlier apply failed
			}
			if err := d.Client.Patch(gctx, p.object, client.Apply, p.opts...); err != nil {
				return fmt.Errorf("%s apply failed: %w", utils.FmtUnstructured(p.object), err)
			}
			mu.Lock()
			sent[keyOf(p.object)] = true
			mu.Unlock()
			return nil
		})
	}
	err := g.Wait()
	return sent, err
}

// objectKey identifies an object across API versions.
type objectKey struct{ group, kind, namespace, name string }

func keyOf(u *unstructured.Unstructured) objectKey {
	gvk := u.GroupVersionKind()
	return objectKey{gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName()}
}

// appliedEntries keeps the entries of a stage that are true: those ssa left unchanged or skipped,
// and those created or configured whose apply was sent.
func appliedEntries(entries []ssa.ChangeSetEntry, sent map[objectKey]bool) []ssa.ChangeSetEntry {
	var out []ssa.ChangeSetEntry
	for _, e := range entries {
		if e.Action == ssa.CreatedAction || e.Action == ssa.ConfiguredAction {
			m := e.ObjMetadata
			if !sent[objectKey{m.GroupKind.Group, m.GroupKind.Kind, m.Namespace, m.Name}] {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}
