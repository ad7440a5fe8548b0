package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/inventory"
	"github.com/sluice-gitops/sluice/shared/owner"
	"github.com/sluice-gitops/sluice/shared/secrets"
)

// secretMask replaces values of Secrets that the diff would otherwise show.
const secretMask = secrets.Mask

// runDiff renders the ResourceSets and compares every generated object with the cluster by a
// server-side apply dry-run as the controller's field manager (fluxcd/pkg/ssa's
// ResourceManager.Diff, the drift detection the controller applies with). It prints one line per
// object, with a unified diff for those that would be configured, and the objects of the
// ResourceSet's inventory in the cluster that it would garbage-collect.
func (o *buildOptions) runDiff(ctx context.Context) error {
	s, err := newSession(o.flags)
	if err != nil {
		return &codedError{code: exitDiffError, err: err}
	}
	sets, err := o.render(ctx, s.namespace, s.client)
	if err != nil {
		return &codedError{code: exitDiffError, err: err}
	}
	// The API server quotes the values of a Secret it could not decode in its dry-run errors,
	// which are printed: masked (secrets.MaskingClient), as the diff masks them.
	rm := ssa.NewResourceManager(secrets.MaskingClient{Client: s.client}, nil, ssa.Owner{Field: fieldManager, Group: ownerGroup})
	var differs bool
	var failed, total int
	var problems []string
	for _, set := range sets {
		d, f := o.diffSet(ctx, rm, set)
		differs = differs || d
		failed += f
		total += len(set.objects)
		d, err := o.printDeleted(ctx, s.client, rm, set)
		if err != nil {
			fmt.Fprintf(o.stderr, "✗ ResourceSet '%s/%s': reading what it applied before: %v\n", set.rset.Namespace, set.rset.Name, err)
			problems = append(problems, fmt.Sprintf("the objects ResourceSet '%s/%s' would delete are unknown", set.rset.Namespace, set.rset.Name))
		}
		differs = differs || d
	}
	if failed > 0 {
		problems = append([]string{fmt.Sprintf("%d of %d objects could not be compared", failed, total)}, problems...)
	}
	switch {
	case len(problems) > 0:
		return &codedError{code: exitDiffError, err: errors.New(strings.Join(problems, "; "))}
	case differs:
		return &codedError{code: exitDifferences}
	default:
		return nil
	}
}

// diffSet compares the objects of one ResourceSet; it reports whether any differs and how many
// could not be compared (their errors are on stderr).
func (o *buildOptions) diffSet(ctx context.Context, rm *ssa.ResourceManager, set rendered) (differs bool, failed int) {
	// As the controller applies: objects annotated reconcile: disabled (in the set or in the
	// cluster) are skipped, and the ResourceSet's force annotation recreates objects whose
	// immutable fields change.
	opts := ssa.DiffOptions{
		Exclusions: map[string]string{rsv1.ReconcileAnnotation: rsv1.DisabledValue},
		Force:      set.rset.GetAnnotations()[rsv1.ForceAnnotation] == rsv1.EnabledValue,
	}
	ahead := createdAhead(set.objects)
	for _, obj := range set.objects {
		entry, live, merged, err := rm.Diff(ctx, obj.DeepCopy(), opts)
		if err != nil {
			if !ahead.explains(obj, err) {
				fmt.Fprintf(o.stderr, "✗ %v\n", err)
				failed++
				continue
			}
			entry = &ssa.ChangeSetEntry{Subject: utils.FmtUnstructured(obj), Action: ssa.CreatedAction}
		}
		fmt.Fprintf(o.stdout, "► %s\n", entry)
		switch entry.Action {
		case ssa.CreatedAction:
			differs = true
		case ssa.ConfiguredAction:
			differs = true
			text, err := unifiedDiff(entry.Subject, forDisplay(live), forDisplay(merged))
			if err != nil {
				fmt.Fprintf(o.stderr, "✗ %s: %v\n", entry.Subject, err)
				failed++
				continue
			}
			fmt.Fprint(o.stdout, text)
		}
	}
	return differs, failed
}

// forDisplay drops the fields of the live and merged objects that no one writes in a template
// and that only make noise in a diff. Secret data is already masked by ssa.Diff; the
// last-applied annotation of kubectl, which holds the data in clear, is masked here.
func forDisplay(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(out.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(out.Object, "metadata", "generation")
	if utils.IsSecret(out) {
		if annotations := out.GetAnnotations(); annotations[corev1.LastAppliedConfigAnnotation] != "" {
			annotations[corev1.LastAppliedConfigAnnotation] = secretMask
			out.SetAnnotations(annotations)
		}
		unstructured.RemoveNestedField(out.Object, "stringData")
	}
	return out
}

// aheadOfTheDryRun are the Namespaces and custom resource kinds that the set itself creates. A
// dry-run of an object in such a Namespace, or of such a kind, fails because the dry-run of the
// Namespace or CRD persisted nothing; the controller applies them first, so those objects
// would be created.
type aheadOfTheDryRun struct {
	namespaces map[string]bool
	kinds      map[schema.GroupKind]bool
}

func createdAhead(objects []*unstructured.Unstructured) aheadOfTheDryRun {
	a := aheadOfTheDryRun{namespaces: map[string]bool{}, kinds: map[schema.GroupKind]bool{}}
	for _, obj := range objects {
		switch {
		case utils.IsNamespace(obj):
			a.namespaces[obj.GetName()] = true
		case utils.IsCRD(obj):
			group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
			a.kinds[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	return a
}

// explains reports whether the dry-run error of obj comes from a Namespace or CRD of the set.
func (a aheadOfTheDryRun) explains(obj *unstructured.Unstructured, err error) bool {
	if apierrors.IsNotFound(err) && a.namespaces[obj.GetNamespace()] {
		return true
	}
	return apimeta.IsNoMatchError(err) && a.kinds[obj.GroupVersionKind().GroupKind()]
}

// printDeleted lists the objects that the ResourceSet applied before (the inventory of the
// ResourceSet in the cluster) and no longer generates, which the controller would delete: those
// still labelled as the ResourceSet's and not annotated prune: disabled, as in its garbage
// collection. A ResourceSet not in the cluster has nothing to delete.
func (o *buildOptions) printDeleted(ctx context.Context, c client.Client, rm *ssa.ResourceManager, set rendered) (bool, error) {
	live := &rsv1.ResourceSet{}
	err := c.Get(ctx, client.ObjectKeyFromObject(set.rset), live)
	if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if live.Status.Inventory == nil {
		return false, nil
	}
	// An inventory past the status's limit is in ConfigMaps beside the ResourceSet.
	store := &inventory.Store{Reader: c}
	entries, err := store.Expand(ctx, live, owner.Entries(live.Status.Inventory.Entries))
	if err != nil {
		return false, fmt.Errorf("the ResourceSet's inventory: %w", err)
	}
	current := map[string]bool{}
	for _, obj := range set.objects {
		current[object.UnstructuredToObjMetadata(obj).String()] = true
	}
	owned := labels.SelectorFromSet(rm.GetOwnerLabels(set.rset.Name, set.rset.Namespace))
	exclusions := map[string]string{rsv1.PruneAnnotation: rsv1.DisabledValue}
	var differs bool
	for _, e := range entries {
		if current[e.ID] {
			continue
		}
		m, err := object.ParseObjMetadata(e.ID)
		if err != nil {
			return differs, fmt.Errorf("inventory entry '%s': %w", e.ID, err)
		}
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(m.GroupKind.WithVersion(e.Version))
		err = c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, existing)
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return differs, err
		}
		if !owned.Matches(labels.Set(existing.GetLabels())) || utils.AnyInMetadata(existing, exclusions) {
			continue
		}
		fmt.Fprintf(o.stdout, "► %s %s\n", utils.FmtObjMetadata(m), ssa.DeletedAction)
		differs = true
	}
	return differs, nil
}
