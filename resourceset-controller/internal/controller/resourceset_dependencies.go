package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/dependency"
)

// checkDependencies evaluates spec.dependsOn as the ResourceSet's account: unmet → wait
// (Ready=False, DependencyNotReady, checked again when a dependency changes, and after
// --requeue-dependency); a bad readyExpr or an unknown kind → Stalled.
func (r *ResourceSetReconciler) checkDependencies(ctx context.Context, obj *rsv1.ResourceSet) (bool, error) {
	if len(obj.Spec.DependsOn) == 0 {
		return false, nil
	}
	r.dependencyWatches.ensure(ctx, obj.Spec.DependsOn)
	cl, err := r.owners().ClientFor(ctx, obj)
	if err != nil {
		return false, err
	}
	refs := make([]dependency.Ref, len(obj.Spec.DependsOn))
	for i, d := range obj.Spec.DependsOn {
		refs[i] = dependency.Ref{APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Namespace: d.Namespace, Ready: d.Ready, ReadyExpr: d.ReadyExpr}
	}
	err = (&dependency.Checker{Reader: cl, Cache: r.Dependencies}).Check(ctx, obj.Namespace, refs)
	switch {
	case err == nil:
		return false, nil
	case dependency.IsTerminal(err):
		return false, r.owners().Failed(obj, rsv1.DependencyNotReadyReason, reconcile.TerminalError(err))
	case dependency.IsNotReady(err):
		r.owners().Waiting(ctx, obj, rsv1.DependencyNotReadyReason, err.Error())
		return true, nil
	default:
		return false, r.owners().Failed(obj, rsv1.DependencyNotReadyReason, err)
	}
}
