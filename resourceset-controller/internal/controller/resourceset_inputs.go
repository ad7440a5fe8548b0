package controller

import (
	"context"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// collectInputs reads the providers of spec.inputsFrom. A provider that is missing, or has never
// exported inputs, makes the ResourceSet wait with what it applied before; a provider that fails
// keeps its last exported inputs, which are used. So an erroring provider never prunes, while a
// healthy provider that exports nothing is an answer and prunes what its inputs generated.
//
// guarded is why minInputs trips, when spec.deletionApproval puts what the inputs would delete
// to a gate's approvers rather than stopping: the inputs are returned, and the plan asks.
func (r *ResourceSetReconciler) collectInputs(ctx context.Context, obj *rsv1.ResourceSet) (groups []inputs.Group, waiting bool, guarded string, err error) {
	providers, perRef, waitMsg, err := r.providersOf(ctx, obj)
	if err != nil {
		return nil, false, "", err
	}
	var data []inputs.Group
	if waitMsg == "" {
		data, waitMsg, err = r.dataInputsOf(ctx, obj, perRef)
		if err != nil {
			return nil, false, "", err
		}
	}
	if waitMsg != "" {
		r.owners().Waiting(ctx, obj, rsv1.DependencyNotReadyReason, waitMsg)
		return nil, true, "", nil
	}
	counts := map[string]int{}
	for _, p := range providers {
		counts[sourceKey(rsv1.ResourceSetInputProviderKind, p.Name)] = len(p.Status.ExportedInputs)
	}
	for _, g := range data {
		counts[sourceKey(g.Kind, g.Name)] = len(g.Inputs)
	}
	if guarded = guardInputs(obj, counts, perRef); guarded != "" && obj.Spec.DeletionApproval == nil {
		r.owners().Waiting(ctx, obj, rsv1.InputsGuardedReason, guarded)
		return nil, true, "", nil
	}
	groups, err = inputs.FromProviders(providers)
	if err != nil {
		return nil, false, "", r.owners().Failed(obj, rsv1.BuildFailedReason, err)
	}
	return append(groups, data...), false, guarded, nil
}

// sourceKey names a source of inputs in perRef and in the counts: "<kind>/<name>".
func sourceKey(kind, name string) string { return kind + "/" + name }

// providersOf lists the providers selected by spec.inputsFrom, once each, in name order, and the
// sources each reference selects (perRef, by sourceKey); waitMsg says which one the ResourceSet
// waits for.
func (r *ResourceSetReconciler) providersOf(ctx context.Context, obj *rsv1.ResourceSet) ([]rsv1.ResourceSetInputProvider, [][]string, string, error) {
	seen := map[string]rsv1.ResourceSetInputProvider{}
	perRef := make([][]string, len(obj.Spec.InputsFrom))
	for i, ref := range obj.Spec.InputsFrom {
		if ref.Kind != rsv1.ResourceSetInputProviderKind {
			continue // ConfigMaps and Secrets: dataInputsOf
		}
		if ref.Name != "" {
			p := rsv1.ResourceSetInputProvider{}
			err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, &p)
			if client.IgnoreNotFound(err) != nil {
				return nil, nil, "", err
			}
			if err != nil {
				return nil, nil, fmt.Sprintf("input provider '%s/%s' not found", obj.Namespace, ref.Name), nil
			}
			seen[p.Name] = p
			perRef[i] = []string{sourceKey(ref.Kind, p.Name)}
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, nil, "", r.owners().Failed(obj, rsv1.BuildFailedReason, reconcile.TerminalError(fmt.Errorf("inputsFrom selector: %w", err)))
		}
		list := &rsv1.ResourceSetInputProviderList{}
		if err := r.List(ctx, list, client.InNamespace(obj.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, nil, "", err
		}
		for _, p := range list.Items {
			seen[p.Name] = p
			perRef[i] = append(perRef[i], sourceKey(ref.Kind, p.Name))
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	providers := make([]rsv1.ResourceSetInputProvider, 0, len(names))
	for _, n := range names {
		p := seen[n]
		ready := conditions.Get(&p, meta.ReadyCondition)
		switch {
		case p.Status.LastExportedRevision != "":
			// A failing provider keeps its last exported inputs: they are what it last knew.
		case ready != nil && ready.Status == metav1.ConditionFalse:
			return nil, nil, fmt.Sprintf("input provider '%s/%s' is not ready: %s", p.Namespace, p.Name, ready.Message), nil
		default:
			return nil, nil, fmt.Sprintf("input provider '%s/%s' has not exported inputs yet", p.Namespace, p.Name), nil
		}
		providers = append(providers, p)
	}
	return providers, perRef, "", nil
}
