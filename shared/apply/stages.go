package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyStaged is ssa's ApplyAllStaged (cluster definitions, then class definitions, then the
// rest, waiting for the definitions to be ready), except that the applies of a stage are sent
// concurrently. ssa dry-runs a stage's objects concurrently, then applies them one by one, so a
// first apply of N objects costs N apply round trips in a row. Here ssa still does everything up
// to the applies, so every object of a stage is dry-run before any is applied (a stage with an
// invalid object applies nothing); each apply it then asks for is handed to one of
// a.Concurrency workers (concurrentApplies).
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
		applies := newConcurrentApplies(c, a.concurrency())
		rm := a.managerFor(applies)
		cs, err := rm.ApplyAll(ctx, stage.objects, opts)
		sent, applyErr := applies.wait()
		if err != nil {
			return changeSet, err
		}
		changeSet.Append(appliedEntries(cs.Entries, sent))
		if applyErr != nil {
			return changeSet, applyErr
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

// concurrentApplies sends each apply (a server-side apply patch that is not a dry-run) from a
// goroutine of its own, n at a time, and answers at once; every other request goes through. A
// caller that asks for more applies waits for a free slot, so no more than n objects (and their
// answers) are held at once. After the first failure, applies are no longer sent.
type concurrentApplies struct {
	client.Client
	slots chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	sent map[objectKey]bool
	err  error
}

func newConcurrentApplies(c client.Client, n int) *concurrentApplies {
	return &concurrentApplies{Client: c, slots: make(chan struct{}, n), sent: map[objectKey]bool{}}
}

func (c *concurrentApplies) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || patch.Type() != types.ApplyPatchType || isDryRun(opts) {
		return c.Client.Patch(ctx, obj, patch, opts...)
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.wg.Add(1)
	go func() {
		defer func() { <-c.slots; c.wg.Done() }()
		if c.failed() {
			return
		}
		key := keyOf(u)
		err := c.Client.Patch(ctx, u, patch, opts...)
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case err == nil:
			c.sent[key] = true
		case c.err == nil:
			c.err = fmt.Errorf("%s apply failed: %w", utils.FmtUnstructured(u), err)
		}
	}()
	return nil
}

func (c *concurrentApplies) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// wait waits for the applies sent and returns the keys of the objects applied and the first
// failure.
func (c *concurrentApplies) wait() (map[objectKey]bool, error) {
	c.wg.Wait()
	return c.sent, c.err
}

func isDryRun(opts []client.PatchOption) bool {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	return len(po.DryRun) > 0
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
