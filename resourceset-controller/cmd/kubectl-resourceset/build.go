package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/builder"
)

// The controller's identity on applied objects (internal/controller: ControllerName and
// ownerGroup): its server-side apply field manager and the prefix of the owner labels
// <ownerGroup>/name and <ownerGroup>/namespace.
const (
	fieldManager = "resourceset-controller"
	ownerGroup   = "resourceset.fluxcd.controlplane.io"
)

// buildOptions are the flags of `build`.
type buildOptions struct {
	flags              *genericclioptions.ConfigFlags
	filename           string
	inputsFrom         string
	inputsFromProvider string
	diff               bool

	stdin          io.Reader
	stdout, stderr io.Writer
}

// rendered is one ResourceSet and the objects it generates, in build order.
type rendered struct {
	rset    *rsv1.ResourceSet
	objects []*unstructured.Unstructured
	// steps are the ResourceSet's steps with the number of objects of each (objects lists them
	// step after step); empty without spec.steps.
	steps []builder.Step
}

// runBuild prints the objects of every ResourceSet of the file as one YAML stream.
func (o *buildOptions) runBuild(ctx context.Context) error {
	sets, err := o.render(ctx, defaultNamespace(o.flags), nil)
	if err != nil {
		return err
	}
	n := 0
	for _, s := range sets {
		n += len(s.objects)
	}
	if n == 0 {
		return errors.New("no objects were generated: the inputs are empty, or every object is disabled")
	}
	return writeYAMLStream(o.stdout, sets)
}

// render builds every ResourceSet of the file with the controller's builder. Objects and
// providers without a namespace are in namespace. When cluster is set, the providers that
// --inputs-from and --inputs-from-provider do not give are read from it.
func (o *buildOptions) render(ctx context.Context, namespace string, cluster client.Reader) ([]rendered, error) {
	stdins := 0
	for _, f := range []string{o.filename, o.inputsFrom, o.inputsFromProvider} {
		if f == "-" {
			stdins++
		}
	}
	if stdins > 1 {
		return nil, errors.New("only one of -f, --inputs-from and --inputs-from-provider can read stdin")
	}
	docs, err := readFile(o.filename, o.stdin)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("invalid filename '%s', must point to an existing file", o.filename)
	}
	if err != nil {
		return nil, err
	}
	rsets, err := resourceSets(docs, namespace)
	if err != nil {
		return nil, err
	}
	if len(rsets) == 0 {
		return nil, fmt.Errorf("no ResourceSet (%s) found in %s", rsv1.GroupVersion, sourceName(o.filename))
	}
	inline, providerDocs, err := o.readInputsFrom()
	if err != nil {
		return nil, err
	}
	pool, err := o.providers(docs, providerDocs, namespace, cluster)
	if err != nil {
		return nil, err
	}
	if inline != nil {
		pool.warnings = nil // the inputs were given: a selector that selects nothing is expected
	}
	// The controller's resource manager sets the owner labels; offline it has no client to use.
	owner := ssa.NewResourceManager(nil, nil, ssa.Owner{Field: fieldManager, Group: ownerGroup})
	sets := make([]rendered, 0, len(rsets))
	for _, rset := range rsets {
		if inline != nil {
			rset.Spec.Inputs = inline
		}
		if len(rset.Spec.InputsFrom) > 0 && o.inputsFrom == "" && o.inputsFromProvider == "" && cluster == nil && len(pool.byKey) == 0 {
			return nil, fmt.Errorf("ResourceSet '%s/%s' has spec.inputsFrom, please provide the inputs with --inputs-from or --inputs-from-provider",
				rset.Namespace, rset.Name)
		}
		groups, err := pool.groupsFor(ctx, rset)
		if err != nil {
			return nil, fmt.Errorf("ResourceSet '%s/%s': %w", rset.Namespace, rset.Name, err)
		}
		r, err := builder.RenderResourceSet(ctx, rset, groups)
		if err != nil {
			return nil, fmt.Errorf("ResourceSet '%s/%s': build failed: %w", rset.Namespace, rset.Name, err)
		}
		if len(r.Failed) > 0 {
			// The controller would apply the other inputs (spec.isolateInputFailures); a build
			// is how templates are checked, so it fails and names them.
			var msgs []string
			for _, f := range r.Failed {
				msgs = append(msgs, f.Message)
			}
			return nil, fmt.Errorf("ResourceSet '%s/%s': build failed for %d inputs, which the controller would leave out (spec.isolateInputFailures): %s",
				rset.Namespace, rset.Name, len(r.Failed), strings.Join(msgs, "; "))
		}
		owner.SetOwnerLabels(r.Objects, rset.Name, rset.Namespace)
		sets = append(sets, rendered{rset: rset, objects: r.Objects, steps: r.Steps})
	}
	return sets, nil
}

// resourceSets decodes the ResourceSets of the documents, in file order; other kinds are skipped.
func resourceSets(docs []document, namespace string) ([]*rsv1.ResourceSet, error) {
	var out []*rsv1.ResourceSet
	seen := map[string]string{}
	for _, d := range docs {
		ok, err := d.is(rsv1.ResourceSetKind)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		rset := &rsv1.ResourceSet{}
		if err := d.decode(rset); err != nil {
			return nil, err
		}
		if rset.Name == "" {
			return nil, fmt.Errorf("%s: ResourceSet has no metadata.name", d.where)
		}
		if rset.Namespace == "" {
			rset.Namespace = namespace
		}
		key := rset.Namespace + "/" + rset.Name
		if prev, ok := seen[key]; ok {
			return nil, fmt.Errorf("%s: ResourceSet '%s' is already defined in %s", d.where, key, prev)
		}
		seen[key] = d.where
		out = append(out, rset)
	}
	return out, nil
}

// providers is the pool of ResourceSetInputProviders: those of the ResourceSet file, those of
// --inputs-from-provider (and of --inputs-from when it holds providers), and, with a cluster and
// without either flag, the cluster's.
func (o *buildOptions) providers(docs, more []document, namespace string, cluster client.Reader) (*providerPool, error) {
	if o.inputsFrom != "" || o.inputsFromProvider != "" {
		cluster = nil
	}
	pool := newProviderPool(cluster, o.stderr)
	if _, err := pool.add(docs, namespace); err != nil {
		return nil, err
	}
	pool.sources = append(pool.sources, sourceName(o.filename))
	given := o.inputsFromProvider
	if given == "" && more != nil {
		given = o.inputsFrom
	}
	switch {
	case given != "":
		n, err := pool.add(more, namespace)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("no ResourceSetInputProvider (%s) found in %s", rsv1.GroupVersion, sourceName(given))
		}
		pool.sources = append(pool.sources, sourceName(given))
	case cluster != nil:
		pool.sources = append(pool.sources, clusterSource)
	default:
		pool.hint = " (give the providers with --inputs-from-provider)"
	}
	return pool, nil
}

// readInputsFrom reads --inputs-from and --inputs-from-provider: the inputs of a plain list in
// --inputs-from (nil when it is not a list), and the documents of the providers' file.
func (o *buildOptions) readInputsFrom() ([]rsv1.ResourceSetInput, []document, error) {
	var inline []rsv1.ResourceSetInput
	var providers []document
	if o.inputsFrom != "" {
		list, docs, err := readInputsOrObjects(o.inputsFrom, o.stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("--inputs-from: %w", err)
		}
		if list == nil && o.inputsFromProvider != "" {
			return nil, nil, errors.New("--inputs-from holds ResourceSetInputProviders: give them with --inputs-from-provider alone, or give a list of inputs to --inputs-from")
		}
		inline, providers = list, docs
	}
	if o.inputsFromProvider != "" {
		docs, err := readFile(o.inputsFromProvider, o.stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("--inputs-from-provider: %w", err)
		}
		providers = docs
	}
	return inline, providers, nil
}

// sourceName is how messages name a file.
func sourceName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// defaultNamespace is the namespace of objects that have none, as kubectl apply would choose
// it: -n, else the namespace of the kubeconfig context, else "default". A build needs no
// cluster, so an unreadable kubeconfig is not an error here.
func defaultNamespace(flags *genericclioptions.ConfigFlags) string {
	if flags.Namespace != nil && *flags.Namespace != "" {
		return *flags.Namespace
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}
