package owner

import (
	"context"

	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
