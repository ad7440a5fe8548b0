package owner

import (
	"context"
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-gitops/sluice/shared/apply"
)

// Held says why a build is not applied: Ready=False with Reason and Message, and the owner waits
// (the next interval, or a watch, looks again).
type Held struct {
	Reason, Message string
}

// BuildGuard is implemented by kinds that check a build before it is applied, such as a limit on
// what one reconciliation may delete (a ManifestGeneration's spec.maxPrune): a non-nil Held
// holds the apply, and nothing is applied or pruned. inventory is the whole inventory. The
// objects re-applied behind closed gates are not checked: they delete nothing new.
type BuildGuard[T Object] interface {
	Guard(ctx context.Context, obj T, inventory []apply.Entry, objects []*unstructured.Unstructured, revision string) (*Held, error)
}

// Deleted is the ids of the inventory entries that the objects do not keep: what applying them
// deletes. An object without a namespace lands in the owner's namespace (or is cluster-scoped).
func Deleted(ownerNamespace string, inventory []apply.Entry, objects []*unstructured.Unstructured) []string {
	keep := make(map[string]bool, 2*len(objects))
	for _, o := range objects {
		gk := o.GroupVersionKind().GroupKind()
		keep[object.ObjMetadata{GroupKind: gk, Namespace: o.GetNamespace(), Name: o.GetName()}.String()] = true
		if o.GetNamespace() == "" {
			keep[object.ObjMetadata{GroupKind: gk, Namespace: ownerNamespace, Name: o.GetName()}.String()] = true
		}
	}
	var deleted []string
	for _, e := range inventory {
		if !keep[e.ID] {
			deleted = append(deleted, e.ID)
		}
	}
	return deleted
}

// PruneLimit is why applying objects must not go ahead: it deletes more of the inventory than
// maxPrune (spec.maxPrune, else the controller's --max-prune, def) allows. msg says so, without
// the remedy, which is the kind's ("revision R would delete N of the M objects applied, more
// than spec.maxPrune 20% allows (2)"); empty when within the limit or without one. deleted are
// the ids the objects delete, when over the limit.
func PruneLimit(maxPrune, def *intstr.IntOrString, revision, ownerNamespace string, inventory []apply.Entry,
	objects []*unstructured.Unstructured) (msg string, deleted []string, err error) {
	source := "spec.maxPrune"
	if maxPrune == nil {
		maxPrune, source = def, "the controller's --max-prune"
	}
	if maxPrune == nil || len(inventory) == 0 {
		return "", nil, nil
	}
	limit, err := intstr.GetScaledValueFromIntOrPercent(maxPrune, len(inventory), false)
	if err != nil {
		return "", nil, fmt.Errorf("spec.maxPrune: %w", err)
	}
	if deleted = Deleted(ownerNamespace, inventory, objects); len(deleted) <= limit {
		return "", nil, nil
	}
	return fmt.Sprintf("revision %s would delete %d of the %d objects applied, more than %s %s allows (%d)",
		revision, len(deleted), len(inventory), source, maxPrune.String(), limit), deleted, nil
}
