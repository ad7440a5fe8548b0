package controller

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// buildFailed reports an error of the build as Ready=False, reason BuildFailed; nothing is
// applied or pruned. A template error or a template over one of the builder's limits is the same
// at every try: it stalls until the spec or the inputs change. A build cut short by the
// reconcile timeout may finish on a less busy try, so it is retried with backoff. A build
// cancelled because the controller stops is no failure of the ResourceSet.
func (r *ResourceSetReconciler) buildFailed(obj *rsv1.ResourceSet, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return r.owners().Failed(obj, rsv1.BuildFailedReason, fmt.Errorf("build failed: not finished within the timeout of %s (%s): %w",
			obj.GetTimeout(), rsv1.ReconcileTimeoutAnnotation, err))
	}
	return r.owners().Failed(obj, rsv1.BuildFailedReason, reconcile.TerminalError(fmt.Errorf("build failed: %w", err)))
}
