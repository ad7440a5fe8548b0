package controller

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
)

// externalArtifactGVK is Flux's ExternalArtifact (source.toolkit.fluxcd.io/v1, RFC-0012): an
// artifact that a third-party controller produced, such as Flux's ArtifactGenerator.
var externalArtifactGVK = fluxapi.ExternalArtifact

// AllNamespaces is the spec.selectors[].namespace that selects in every namespace.
const allNamespaces = "*"

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=externalartifacts,verbs=get;list;watch

// externalArtifacts exports one input per ExternalArtifact that spec.selectors choose (each
// artifact once, however many selectors choose it), sorted by namespace and name, at most
// spec.filter.limit: `id` (a short hash of namespace/name), `name`, `namespace`, `revision` (of
// status.artifact, when it has one) and the artifact's labels as keys of their own. Artifacts of
// the provider's namespace are read with the controller's client; those of another namespace, or
// of all ("*"), as the provider's account (spec.serviceAccountName, else
// --default-service-account), so that a tenant reads no more through a provider than its account
// may.
func (r *ResourceSetInputProviderReconciler) externalArtifacts(ctx context.Context, obj *rsv1.ResourceSetInputProvider) ([]map[string]any, error) {
	if len(obj.Spec.Selectors) == 0 {
		return nil, reconcile.TerminalError(fmt.Errorf("spec.selectors must be set for the %s type", rsv1.InputProviderExternalArtifact))
	}
	found := map[string]*unstructured.Unstructured{}
	for i, sel := range obj.Spec.Selectors {
		items, err := r.selectArtifacts(ctx, obj, sel)
		if err != nil {
			return nil, fmt.Errorf("spec.selectors[%d]: %w", i, err)
		}
		for _, a := range items {
			found[a.GetNamespace()+"/"+a.GetName()] = a
		}
	}
	keys := make([]string, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if limit := obj.GetLimit(); len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]map[string]any, 0, len(keys))
	for _, k := range keys {
		out = append(out, artifactInput(k, found[k]))
	}
	return out, nil
}

func artifactInput(key string, a *unstructured.Unstructured) map[string]any {
	in := map[string]any{}
	for k, v := range a.GetLabels() {
		in[k] = v
	}
	in[inputs.IDKey] = inputs.ID(key)
	in["name"] = a.GetName()
	in["namespace"] = a.GetNamespace()
	if rev, ok, _ := unstructured.NestedString(a.Object, "status", "artifact", "revision"); ok && rev != "" {
		in["revision"] = rev
	} else {
		delete(in, "revision")
	}
	return in
}

// selectArtifacts reads the ExternalArtifacts one selector chooses.
func (r *ResourceSetInputProviderReconciler) selectArtifacts(ctx context.Context, obj *rsv1.ResourceSetInputProvider,
	sel rsv1.ExternalArtifactSelector) ([]*unstructured.Unstructured, error) {
	ns := sel.Namespace
	if ns == "" {
		ns = obj.Namespace
	}
	reader, account, err := r.artifactReader(obj, ns)
	if err != nil {
		return nil, err
	}
	if sel.Name != "" && ns != allNamespaces {
		a := &unstructured.Unstructured{}
		a.SetGroupVersionKind(externalArtifactGVK)
		err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: sel.Name}, a)
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, readError(err, account, "read the ExternalArtifact '"+ns+"/"+sel.Name+"'")
		}
		return []*unstructured.Unstructured{a}, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("invalid label selector: %w", err))
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(externalArtifactGVK.GroupVersion().WithKind(externalArtifactGVK.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: selector}}
	what := "list the ExternalArtifacts of every namespace"
	if ns != allNamespaces {
		opts = append(opts, client.InNamespace(ns))
		what = "list the ExternalArtifacts of '" + ns + "'"
	}
	if err := reader.List(ctx, list, opts...); err != nil {
		return nil, readError(err, account, what)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		if sel.Name == "" || list.Items[i].GetName() == sel.Name {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// artifactReader is the client that reads the ExternalArtifacts of namespace for obj, and the
// account it acts as ("" for the controller).
func (r *ResourceSetInputProviderReconciler) artifactReader(obj *rsv1.ResourceSetInputProvider, namespace string) (client.Reader, string, error) {
	if namespace == obj.Namespace || r.Clients == nil {
		return r.Client, "", nil
	}
	cl, err := r.Clients.For(obj.Namespace, obj.Spec.ServiceAccountName)
	if err != nil {
		return nil, "", err
	}
	return cl, cl.Account, nil
}

// readError says what could not be read; a missing CRD and a refusal say what to do.
func readError(err error, account, what string) error {
	switch {
	case apierrors.IsForbidden(err):
		who := "the controller"
		if account != "" {
			who = "the provider's account " + account
		}
		return fmt.Errorf("%s may not %s: grant it, or select in the provider's namespace", who, what)
	case apimeta.IsNoMatchError(err):
		return fmt.Errorf("cannot %s: the ExternalArtifact CRD (source.toolkit.fluxcd.io/v1) is not installed", what)
	}
	return fmt.Errorf("cannot %s: %w", what, err)
}

// selectsArtifact reports whether a selector of a provider in providerNS chooses the artifact.
func selectsArtifact(providerNS string, sel rsv1.ExternalArtifactSelector, a client.Object) bool {
	ns := sel.Namespace
	if ns == "" {
		ns = providerNS
	}
	if ns != allNamespaces && ns != a.GetNamespace() {
		return false
	}
	if sel.Name != "" {
		return sel.Name == a.GetName()
	}
	s, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
	return err == nil && s.Matches(labels.Set(a.GetLabels()))
}
