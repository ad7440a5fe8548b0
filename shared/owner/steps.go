package owner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/eventmeta"
)

// Step is one of the ordered groups of a plan's objects: the next Size objects, health-checked
// within Timeout (the owner's timeout when zero) before the next step is applied.
type Step struct {
	Name    string
	Size    int
	Timeout time.Duration
}

// applySteps applies every step but the last, in order, each waited for (whatever the owner's
// wait setting) before the next: a step that fails stops the sequence, and what it applied joins
// the inventory so that nothing is orphaned; nothing is pruned. The last step is left to the
// owner's usual apply of all the objects, which prunes and waits as the owner says; its timeout
// is returned (zero: the owner's). A plan of one step or none applies nothing here.
func (l *Lifecycle[T]) applySteps(ctx context.Context, obj T, fields Fields, settings Settings,
	objects []*unstructured.Unstructured, revision string, steps []Step) (time.Duration, error) {
	if len(steps) < 2 {
		if len(steps) == 1 {
			return steps[0].Timeout, nil
		}
		return 0, nil
	}
	cl, err := l.clientFor(ctx, obj, settings)
	if err != nil {
		return 0, err
	}
	offset := 0
	for i, step := range steps[:len(steps)-1] {
		part := objects[offset : offset+step.Size]
		offset += step.Size
		timeout := step.Timeout
		if timeout <= 0 {
			timeout = settings.Timeout
		}
		res, err := l.applier(cl).Apply(ctx, apply.Request{
			Owner: client.ObjectKeyFromObject(obj), Revision: revision, Objects: part,
			Wait: true, Timeout: timeout, Force: settings.Force, Step: step.Name,
		})
		if res != nil && len(res.Inventory) > 0 {
			fields.SetInventory(apply.Merge(fields.Inventory(), res.Inventory))
		}
		if err != nil {
			reason, what := meta.ReconciliationFailedReason, "apply failed"
			if errors.Is(err, apply.ErrHealth) {
				reason, what = meta.HealthCheckFailedReason, "health check failed"
			}
			return 0, l.Failed(obj, reason, fmt.Errorf("step %d/%d %q %s: %w", i+1, len(steps), step.Name, what, err))
		}
		if res.Changes != "" {
			l.EventRecorder.AnnotatedEventf(obj, eventmeta.RevisionOf(l.Client.Scheme(), obj, revision), corev1.EventTypeNormal,
				ApplySucceededReason, "step %q: %s", step.Name, res.Changes)
		}
	}
	return steps[len(steps)-1].Timeout, nil
}

// DeletionOrderer is implemented by kinds whose objects are deleted in an order of their own
// (a ResourceSet's steps, last first): groups of inventory ids, deleted one group after another,
// each completely (Flux's kinds first, as always) before the next. Nil deletes everything at once.
type DeletionOrderer[T Object] interface {
	DeletionOrder(ctx context.Context, obj T) [][]string
}

// deletionGroups splits an inventory by the kind's DeletionOrder; what no group names is
// deleted with the last group.
func (l *Lifecycle[T]) deletionGroups(ctx context.Context, obj T, inv []apply.Entry) [][]apply.Entry {
	orderer, ok := l.Kind.(DeletionOrderer[T])
	if !ok {
		return [][]apply.Entry{inv}
	}
	order := orderer.DeletionOrder(ctx, obj)
	if len(order) == 0 {
		return [][]apply.Entry{inv}
	}
	groupOf := map[string]int{}
	for i, ids := range order {
		for _, id := range ids {
			if _, seen := groupOf[id]; !seen {
				groupOf[id] = i
			}
		}
	}
	groups := make([][]apply.Entry, len(order))
	for _, e := range inv {
		i, ok := groupOf[e.ID]
		if !ok {
			i = len(order) - 1
		}
		groups[i] = append(groups[i], e)
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}
