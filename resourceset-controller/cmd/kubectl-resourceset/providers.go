package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// providerPool holds the ResourceSetInputProviders a build may select: those of the files and,
// when a cluster is given, those of the cluster (a provider of the files replaces the cluster's
// provider of the same name, as it is what is about to be applied).
type providerPool struct {
	byKey   map[string]pooledProvider // "<namespace>/<name>"
	sources []string                  // where providers were looked for, for messages
	hint    string                    // what to do about a missing provider
	cluster client.Reader             // nil offline
	listed  map[string]bool           // namespaces already listed from the cluster
	// warnings receives what is worth saying but not an error.
	warnings io.Writer
}

// clusterSource is where the providers read from the cluster come from.
const clusterSource = "the cluster"

type pooledProvider struct {
	provider rsv1.ResourceSetInputProvider
	where    string
}

func newProviderPool(cluster client.Reader, warnings io.Writer) *providerPool {
	return &providerPool{byKey: map[string]pooledProvider{}, cluster: cluster, listed: map[string]bool{}, warnings: warnings}
}

// add puts the providers of a file's documents in the pool, in namespace when they have none.
func (pp *providerPool) add(docs []document, namespace string) (int, error) {
	n := 0
	for _, d := range docs {
		ok, err := d.is(rsv1.ResourceSetInputProviderKind)
		if err != nil {
			return n, err
		}
		if !ok {
			continue
		}
		var p rsv1.ResourceSetInputProvider
		if err := d.decode(&p); err != nil {
			return n, err
		}
		if p.Namespace == "" {
			p.Namespace = namespace
		}
		key := p.Namespace + "/" + p.Name
		if prev, ok := pp.byKey[key]; ok {
			return n, fmt.Errorf("%s: ResourceSetInputProvider '%s' is already defined in %s", d.where, key, prev.where)
		}
		pp.byKey[key] = pooledProvider{provider: p, where: d.where}
		n++
	}
	return n, nil
}

// inNamespace is every provider of a namespace, in name order.
func (pp *providerPool) inNamespace(ctx context.Context, namespace string) ([]pooledProvider, error) {
	if err := pp.listCluster(ctx, namespace); err != nil {
		return nil, err
	}
	var out []pooledProvider
	for _, p := range pp.byKey {
		if p.provider.Namespace == namespace {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].provider.Name < out[j].provider.Name })
	return out, nil
}

// listCluster adds the cluster's providers of a namespace, once; a cluster without the
// ResourceSetInputProvider API has none.
func (pp *providerPool) listCluster(ctx context.Context, namespace string) error {
	if pp.cluster == nil || pp.listed[namespace] {
		return nil
	}
	pp.listed[namespace] = true
	list := &rsv1.ResourceSetInputProviderList{}
	if err := pp.cluster.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if apimeta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing the ResourceSetInputProviders of namespace %q: %w", namespace, err)
	}
	for _, p := range list.Items {
		key := p.Namespace + "/" + p.Name
		if _, ok := pp.byKey[key]; !ok {
			pp.byKey[key] = pooledProvider{provider: p, where: clusterSource}
		}
	}
	return nil
}

// groupsFor selects the providers of the ResourceSet's spec.inputsFrom with the controller's
// semantics (by name, else by label selector, in the ResourceSet's namespace; each provider once,
// in name order) and turns their inputs into groups with the controller's inputs.FromProviders.
// A provider named in spec.inputsFrom must exist; a selector may select none.
func (pp *providerPool) groupsFor(ctx context.Context, rset *rsv1.ResourceSet) ([]inputs.Group, error) {
	if len(rset.Spec.InputsFrom) == 0 {
		return nil, nil
	}
	candidates, err := pp.inNamespace(ctx, rset.Namespace)
	if err != nil {
		return nil, err
	}
	selected := map[string]pooledProvider{}
	for i, ref := range rset.Spec.InputsFrom {
		if ref.Kind != "" && ref.Kind != rsv1.ResourceSetInputProviderKind {
			return nil, fmt.Errorf("ResourceSet '%s/%s': spec.inputsFrom[%d] is a %s, whose data the controller reads in the cluster: "+
				"build reads input providers only", rset.Namespace, rset.Name, i, ref.Kind)
		}
		if ref.Name != "" {
			p, ok := pp.byKey[rset.Namespace+"/"+ref.Name]
			if !ok {
				return nil, fmt.Errorf("input provider '%s/%s' not found in %s%s",
					rset.Namespace, ref.Name, strings.Join(pp.sources, ", "), pp.hint)
			}
			selected[ref.Name] = p
			continue
		}
		// The selector match of the controller's `selects` (internal/controller).
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.inputsFrom[%d].selector: %w", i, err)
		}
		matched := false
		for _, p := range candidates {
			if sel.Matches(labels.Set(p.provider.Labels)) {
				selected[p.provider.Name] = p
				matched = true
			}
		}
		if !matched && pp.warnings != nil {
			// Not an error (the controller renders nothing then), but a forgotten --inputs-from
			// would otherwise print an empty stream without a word.
			fmt.Fprintf(pp.warnings, "warning: ResourceSet '%s/%s': spec.inputsFrom[%d].selector selects no provider in %s%s\n",
				rset.Namespace, rset.Name, i, strings.Join(pp.sources, ", "), pp.hint)
		}
	}
	names := make([]string, 0, len(selected))
	for n := range selected {
		names = append(names, n)
	}
	sort.Strings(names)
	providers := make([]rsv1.ResourceSetInputProvider, 0, len(names))
	for _, n := range names {
		p, err := withExportedInputs(selected[n])
		if err != nil {
			return nil, err
		}
		providers = append(providers, p)
	}
	return inputs.FromProviders(providers)
}

// withExportedInputs is the provider with the inputs it exports. Without a cluster there is no
// controller to fetch them, so a provider contributes its status.exportedInputs when it has
// exported (a document saved with `kubectl get -o yaml`); else a Static provider contributes what
// the controller would export for it, inputs.Static of its spec.defaultValues with the id of its name; any other type
// is an error.
func withExportedInputs(pp pooledProvider) (rsv1.ResourceSetInputProvider, error) {
	p := *pp.provider.DeepCopy()
	if p.Status.LastExportedRevision != "" || len(p.Status.ExportedInputs) > 0 {
		return p, nil
	}
	key := p.Namespace + "/" + p.Name
	if p.Spec.Type != rsv1.InputProviderStatic && pp.where == clusterSource {
		// What the controller says while it waits for the provider.
		return p, fmt.Errorf("input provider '%s' has not exported inputs yet", key)
	}
	if p.Spec.Type != rsv1.InputProviderStatic {
		return p, fmt.Errorf("input provider '%s' (%s) has no status.exportedInputs, and only the controller can "+
			"fetch the inputs of type %s: give its status, e.g. from `kubectl get rsip %s -n %s -o yaml`",
			key, pp.where, p.Spec.Type, p.Name, p.Namespace)
	}
	defaults := map[string]any{}
	if len(p.Spec.DefaultValues) > 0 {
		decoded, err := inputs.FromAPI([]rsv1.ResourceSetInput{p.Spec.DefaultValues})
		if err != nil {
			return p, fmt.Errorf("input provider '%s': spec.defaultValues: %w", key, err)
		}
		defaults = decoded[0]
	}
	// The controller's id is that of the provider's UID, which a file does not have: the name's,
	// as flux-operator's build gives.
	exported, err := inputs.ToAPI(inputs.Static(defaults, inputs.ID(p.Name)))
	if err != nil {
		return p, fmt.Errorf("input provider '%s': %w", key, err)
	}
	p.Status.ExportedInputs = exported
	return p, nil
}
