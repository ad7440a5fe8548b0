package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/secrets"
)

// The kinds of inputsFrom besides ResourceSetInputProvider.
const (
	configMapKind = "ConfigMap"
	secretKind    = "Secret"
)

// dataInputsOf reads the ConfigMaps and Secrets that spec.inputsFrom names (a Sluice addition):
// each object is one input made of its data (a Secret's decoded), with an id that is a hash of
// it unless the data has one. They are read as the ResourceSet's account, so that a tenant
// cannot read through a ResourceSet what its account may not; a missing or unreadable object by
// name makes the ResourceSet wait with what it applied before. It returns one group per object,
// in sourceKey order, and adds their keys to perRef.
func (r *ResourceSetReconciler) dataInputsOf(ctx context.Context, obj *rsv1.ResourceSet, perRef [][]string) ([]inputs.Group, string, error) {
	var refs []int
	for i, ref := range obj.Spec.InputsFrom {
		if ref.Kind == configMapKind || ref.Kind == secretKind {
			refs = append(refs, i)
		}
	}
	if len(refs) == 0 {
		return nil, "", nil
	}
	cl, err := r.owners().ClientFor(ctx, obj)
	if err != nil {
		return nil, "", err
	}
	seen := map[string]map[string]any{}
	for _, i := range refs {
		ref := obj.Spec.InputsFrom[i]
		if ref.Name != "" {
			data, err := readData(ctx, cl, ref.Kind, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name})
			switch {
			case apierrors.IsNotFound(err):
				return nil, fmt.Sprintf("%s '%s/%s' not found", ref.Kind, obj.Namespace, ref.Name), nil
			case apierrors.IsForbidden(err):
				return nil, fmt.Sprintf("%s '%s/%s' cannot be read by the ResourceSet's account: %s", ref.Kind, obj.Namespace, ref.Name,
					err.Error()), nil
			case err != nil:
				return nil, "", err
			}
			key := sourceKey(ref.Kind, ref.Name)
			seen[key], perRef[i] = data, []string{key}
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, "", r.owners().Failed(obj, rsv1.BuildFailedReason, reconcile.TerminalError(fmt.Errorf("inputsFrom selector: %w", err)))
		}
		items, err := listData(ctx, cl, ref.Kind, obj.Namespace, client.MatchingLabelsSelector{Selector: sel})
		if apierrors.IsForbidden(err) {
			return nil, fmt.Sprintf("the ResourceSet's account cannot list the %ss of '%s'", ref.Kind, obj.Namespace), nil
		}
		if err != nil {
			return nil, "", err
		}
		for name, data := range items {
			key := sourceKey(ref.Kind, name)
			seen[key] = data
			perRef[i] = append(perRef[i], key)
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	groups := make([]inputs.Group, 0, len(keys))
	for _, k := range keys {
		kind, name, _ := strings.Cut(k, "/")
		// Sluice's own kinds keep Sluice's ids: the data's own id, else a hash of the data, so a
		// change of data is a new input (flux-operator has no such kind to follow).
		groups = append(groups, inputs.Group{APIVersion: "v1", Kind: kind, Namespace: obj.Namespace, Name: name,
			Inputs: inputs.Static(seen[k], inputs.LegacyStaticID(seen[k]))})
	}
	return groups, "", nil
}

// readData reads the data of one ConfigMap or Secret.
func readData(ctx context.Context, cl client.Reader, kind string, key client.ObjectKey) (map[string]any, error) {
	if kind == secretKind {
		s, err := secrets.Get(ctx, cl, key)
		if err != nil {
			return nil, err
		}
		return secretData(s), nil
	}
	cm := &corev1.ConfigMap{}
	if err := cl.Get(ctx, key, cm); err != nil {
		return nil, err
	}
	return configMapData(cm), nil
}

// listData reads the data of the ConfigMaps or Secrets of a namespace that match, by name.
func listData(ctx context.Context, cl client.Reader, kind, namespace string, match client.MatchingLabelsSelector) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	if kind == secretKind {
		list, err := secrets.List(ctx, cl, namespace, match)
		if err != nil {
			return nil, err
		}
		for i := range list {
			out[list[i].Name] = secretData(&list[i])
		}
		return out, nil
	}
	list := &corev1.ConfigMapList{}
	if err := cl.List(ctx, list, client.InNamespace(namespace), match); err != nil {
		return nil, err
	}
	for i := range list.Items {
		out[list.Items[i].Name] = configMapData(&list.Items[i])
	}
	return out, nil
}

func configMapData(cm *corev1.ConfigMap) map[string]any {
	m := make(map[string]any, len(cm.Data))
	for k, v := range cm.Data {
		m[k] = v
	}
	return m
}

func secretData(s *corev1.Secret) map[string]any {
	m := make(map[string]any, len(s.Data))
	for k, v := range s.Data {
		m[k] = string(v)
	}
	return m
}
