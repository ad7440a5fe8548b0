package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/builder"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/apply"
)

// keepLegacyPermuteIDs keeps the ids Sluice gave Permute combinations before it took
// flux-operator's for a ResourceSet whose applied objects are named after them: when the render
// with today's ids would delete objects of the inventory that the render with the earlier ids
// keeps, the earlier render is the one applied. So an upgrade deletes and recreates no object;
// a ResourceSet created since, or whose objects do not use the ids, renders with flux-operator's.
// The earlier render is only tried when today's would delete something.
func keepLegacyPermuteIDs(ctx context.Context, obj *rsv1.ResourceSet, groups []inputs.Group, rendered builder.Rendered,
	inventory []apply.Entry) builder.Rendered {
	if obj.GetInputStrategy() != rsv1.InputStrategyPermute || len(inventory) == 0 {
		return rendered
	}
	deleted := len(deletedOf(obj, inventory, rendered.Objects))
	if deleted == 0 {
		return rendered
	}
	legacy, err := builder.RenderResourceSetLegacyIDs(ctx, obj, groups)
	if err != nil || len(deletedOf(obj, inventory, legacy.Objects)) >= deleted {
		return rendered
	}
	log.FromContext(ctx).Info("kept the Permute input ids of the objects applied before flux-operator's ids", "inventory", len(inventory))
	return legacy
}
