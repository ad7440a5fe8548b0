package controller

import (
	"context"

	"github.com/fluxcd/cli-utils/pkg/object"
	"sigs.k8s.io/controller-runtime/pkg/log"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/builder"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// DeletionOrder (owner.DeletionOrderer) deletes a ResourceSet's steps last first, as Sluice
// answers flux-operator #909: what a later step runs on top of an earlier one (an application on
// its database) goes first. The steps are rendered again from the spec and the inputs as they are
// now; when that cannot be done (a provider gone, the account gone), everything is deleted at once,
// as without steps.
func (r *ResourceSetReconciler) DeletionOrder(ctx context.Context, obj *rsv1.ResourceSet) [][]string {
	if len(obj.Spec.Steps) < 2 {
		return nil
	}
	providers, perRef, waitMsg, err := r.providersOf(ctx, obj)
	if err != nil || waitMsg != "" {
		log.FromContext(ctx).Info("deleting the steps at once: their inputs cannot be read", "reason", waitMsg, "error", err)
		return nil
	}
	groups, err := inputs.FromProviders(providers)
	if err != nil {
		return nil
	}
	data, waitMsg, err := r.dataInputsOf(ctx, obj, perRef)
	if err != nil || waitMsg != "" {
		log.FromContext(ctx).Info("deleting the steps at once: their inputs cannot be read", "reason", waitMsg, "error", err)
		return nil
	}
	rendered, err := builder.RenderResourceSet(ctx, obj, append(groups, data...))
	if err != nil || len(rendered.Steps) == 0 {
		return nil
	}
	order := make([][]string, 0, len(rendered.Steps))
	offset := 0
	for _, step := range rendered.Steps {
		var ids []string
		for _, o := range rendered.Objects[offset : offset+step.Size] {
			m := object.UnstructuredToObjMetadata(o)
			ids = append(ids, m.String())
			if m.Namespace == "" { // defaulted to the ResourceSet's namespace when namespaced
				m.Namespace = obj.Namespace
				ids = append(ids, m.String())
			}
		}
		offset += step.Size
		order = append([][]string{ids}, order...)
	}
	return order
}
