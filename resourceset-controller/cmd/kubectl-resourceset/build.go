package main

import (
	"context"
	"errors"
	"fmt"
	"io"

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
	flags      *genericclioptions.ConfigFlags
	filename   string
	inputsFrom string
	diff       bool

	stdin          io.Reader
	stdout, stderr io.Writer
}

// rendered is one ResourceSet and the objects it generates, in build order.
type rendered struct {
	rset    *rsv1.ResourceSet
	objects []*unstructured.Unstructured
}

// runBuild prints the objects of every ResourceSet of the file as one YAML stream.
func (o *buildOptions) runBuild(ctx context.Context) error {
	sets, err := o.render(ctx, defaultNamespace(o.flags), nil)
	if err != nil {
		return err
	}
	var all []*unstructured.Unstructured
	for _, s := range sets {
		all = append(all, s.objects...)
	}
	return writeYAMLStream(o.stdout, all)
}

// render builds every ResourceSet of the file with the controller's builder. Objects and
// providers without a namespace are in namespace. When cluster is set, the providers that
// --inputs-from does not give are read from it.
func (o *buildOptions) render(ctx context.Context, namespace string, cluster client.Reader) ([]rendered, error) {
	if o.filename == "-" && o.inputsFrom == "-" {
		return nil, errors.New("-f and --inputs-from cannot both read stdin")
	}
	docs, err := readFile(o.filename, o.stdin)
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

	pool, err := o.providers(docs, namespace, cluster)
	if err != nil {
		return nil, err
	}
	// The controller's resource manager sets the owner labels; offline it has no client to use.
	owner := ssa.NewResourceManager(nil, nil, ssa.Owner{Field: fieldManager, Group: ownerGroup})
	sets := make([]rendered, 0, len(rsets))
	for _, rset := range rsets {
		groups, err := pool.groupsFor(ctx, rset)
		if err != nil {
			return nil, fmt.Errorf("ResourceSet '%s/%s': %w", rset.Namespace, rset.Name, err)
		}
		objects, err := builder.ForResourceSet(ctx, rset, groups)
		if err != nil {
			return nil, fmt.Errorf("ResourceSet '%s/%s': build failed: %w", rset.Namespace, rset.Name, err)
		}
		owner.SetOwnerLabels(objects, rset.Name, rset.Namespace)
		sets = append(sets, rendered{rset: rset, objects: objects})
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
// --inputs-from, and, with a cluster and without --inputs-from, the cluster's.
func (o *buildOptions) providers(docs []document, namespace string, cluster client.Reader) (*providerPool, error) {
	if o.inputsFrom != "" {
		cluster = nil
	}
	pool := newProviderPool(cluster, o.stderr)
	if _, err := pool.add(docs, namespace); err != nil {
		return nil, err
	}
	pool.sources = append(pool.sources, sourceName(o.filename))
	switch {
	case o.inputsFrom != "":
		more, err := readFile(o.inputsFrom, o.stdin)
		if err != nil {
			return nil, fmt.Errorf("--inputs-from: %w", err)
		}
		n, err := pool.add(more, namespace)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("no ResourceSetInputProvider (%s) found in %s", rsv1.GroupVersion, sourceName(o.inputsFrom))
		}
		pool.sources = append(pool.sources, sourceName(o.inputsFrom))
	case cluster != nil:
		pool.sources = append(pool.sources, clusterSource)
	default:
		pool.hint = " (give the providers with --inputs-from)"
	}
	return pool, nil
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
