package apply

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
)

// FluxApplierWait is how long garbage collection waits for deleted appliers to be finalized
// before it deletes the rest (their ServiceAccounts, RoleBindings).
const FluxApplierWait = time.Minute

// appliers are the kinds that delete what they applied when they are deleted (a finalizer,
// often as their own service account): garbage collection lets them finish first.
var appliers = map[schema.GroupKind]bool{
	fluxapi.Kustomization.GroupKind():      true,
	fluxapi.HelmRelease.GroupKind():        true,
	fluxapi.ManifestGeneration.GroupKind(): true,
	fluxapi.ResourceSet.GroupKind():        true,
}

// prune deletes stale objects in stages: Flux objects first, then, once the appliers among
// them are finalized (at most FluxApplierWait), everything else. Objects not labelled as the
// owner's, or annotated with the prune annotation set to disabled, stay. It returns the deleted
// objects, one "Kind/ns/name deleted" line each, sorted.
func (a *Applier) prune(ctx context.Context, rm *ssa.ResourceManager, owner map[string]string, stale []*unstructured.Unstructured) ([]string, error) {
	opts := ssa.DeleteOptions{
		PropagationPolicy: metav1.DeletePropagationBackground,
		Inclusions:        owner,
		Exclusions:        map[string]string{a.Annotations.Prune: Disabled},
	}
	var flux, rest []*unstructured.Unstructured
	for _, o := range stale {
		if isFluxObject(o) {
			flux = append(flux, o)
		} else {
			rest = append(rest, o)
		}
	}
	deleted := ssa.NewChangeSet()
	if len(flux) > 0 {
		cs, err := rm.DeleteAll(ctx, flux, opts)
		deleted.Append(cs.Entries)
		if err != nil {
			return nil, err
		}
		deleting := ssa.NewChangeSet()
		for _, e := range cs.Entries {
			if e.Action == ssa.DeletedAction && appliers[e.ObjMetadata.GroupKind] {
				deleting.Add(e)
			}
		}
		if len(deleting.Entries) > 0 {
			if err := waitForTermination(ctx, rm.Client(), deleting, FluxApplierWait); err != nil {
				log.FromContext(ctx).Info("Flux appliers were not finalized in time, deleting the rest", "error", err.Error())
			}
		}
	}
	if len(rest) > 0 {
		cs, err := rm.DeleteAll(ctx, rest, opts)
		deleted.Append(cs.Entries)
		if err != nil {
			return nil, err
		}
	}
	var lines []string
	for _, e := range deleted.Entries {
		if e.Action == ssa.DeletedAction {
			lines = append(lines, e.String())
		}
	}
	sort.Strings(lines)
	return lines, nil
}

// isFluxObject: an object of a Flux API (toolkit.fluxcd.io) or of the Flux operator APIs.
func isFluxObject(o *unstructured.Unstructured) bool {
	g := o.GroupVersionKind().Group
	return strings.HasSuffix(g, ".toolkit.fluxcd.io") || g == "fluxcd.controlplane.io"
}
