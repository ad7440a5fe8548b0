package status

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher writes what a reconcile changed in an object: metadata and spec in one request, the
// whole status, conditions included, in one more. A reader never sees the Ready condition of
// one reconcile next to the other status fields of the previous one (an artifact, an inventory,
// a history), as it would with the fluxcd patch helper, which writes the conditions and the rest
// of the status in two requests. The controller must be the only writer of the status.
//
// Each Patch writes the changes since NewPatcher or the previous Patch (JSON merge patches:
// a changed list, such as the conditions or the finalizers, is written whole).
type Patcher struct {
	client client.Client
	before client.Object
	// written says that the last Patch succeeded: the API holds obj as it was then.
	written bool
}

// NewPatcher starts tracking the changes of obj.
func NewPatcher(obj client.Object, c client.Client) *Patcher {
	return &Patcher{client: c, before: obj.DeepCopyObject().(client.Object)}
}

// Patch writes the changes of obj since the last Patch, as fieldOwner. obj itself is not
// updated from the server's answers.
func (p *Patcher) Patch(ctx context.Context, obj client.Object, fieldOwner string) error {
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.before)
	if err != nil {
		return err
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	changed := func(fields ...string) bool {
		for _, f := range fields {
			if !reflect.DeepEqual(before[f], after[f]) {
				return true
			}
		}
		return false
	}
	// The requests are sent with copies: the answers would overwrite obj with the server's
	// state, the old status among it.
	var errs []error
	if changed("metadata", "spec") {
		errs = append(errs, p.client.Patch(ctx, obj.DeepCopyObject().(client.Object), client.MergeFrom(p.before), client.FieldOwner(fieldOwner)))
	}
	if changed("status") {
		errs = append(errs, p.client.Status().Patch(ctx, obj.DeepCopyObject().(client.Object), client.MergeFrom(p.before),
			&client.SubResourcePatchOptions{PatchOptions: client.PatchOptions{FieldManager: fieldOwner}}))
	}
	// An aggregate, as the patch helper's: Gone tells a deleted object by its NotFound errors.
	if err := kerrors.NewAggregate(errs); err != nil {
		p.written = false
		return err
	}
	p.before = obj.DeepCopyObject().(client.Object)
	p.written = true
	return nil
}
