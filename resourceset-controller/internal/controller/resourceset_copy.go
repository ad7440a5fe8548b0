package controller

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/secrets"
)

// errDataFrom marks a copyFrom or convertKubeConfigFrom that cannot work whatever the cluster
// holds (a malformed reference, a kubeconfig without a cluster): no retry can help.
var errDataFrom = errors.New("invalid data reference")

// resolveData fills the data that copyFrom and convertKubeConfigFrom name, then the checksums of
// checksumFrom (which may name a ConfigMap just filled), as the ResourceSet's account; the
// sources outside the ResourceSet become status.externalChecksumRefs, which are watched.
func (r *ResourceSetReconciler) resolveData(ctx context.Context, obj *rsv1.ResourceSet, objects []*unstructured.Unstructured) (string, error) {
	obj.Status.ExternalChecksumRefs = nil
	copies, checksums := hasDataFrom(objects), hasChecksumFrom(objects)
	if !copies && !checksums {
		return "", nil
	}
	cl, err := r.owners().ClientFor(ctx, obj)
	if err != nil {
		return "", err
	}
	var external []string
	if copies {
		sources, waitMsg, err := fillData(ctx, cl, objects)
		if err != nil || waitMsg != "" {
			return waitMsg, err
		}
		external = sources
	}
	if checksums {
		refs, waitMsg, err := writeChecksums(ctx, cl, objects, obj.Namespace)
		if err != nil || waitMsg != "" {
			return waitMsg, err
		}
		for _, ref := range refs {
			if !slices.Contains(external, ref) {
				external = append(external, ref)
			}
		}
	}
	slices.Sort(external)
	obj.Status.ExternalChecksumRefs = external
	return "", nil
}

// hasDataFrom says whether a generated ConfigMap or Secret carries copyFrom or
// convertKubeConfigFrom.
func hasDataFrom(objects []*unstructured.Unstructured) bool {
	for _, o := range objects {
		a := o.GetAnnotations()
		if _, ok := a[rsv1.CopyFromAnnotation]; ok {
			return true
		}
		if _, ok := a[rsv1.ConvertKubeConfigFromAnnotation]; ok {
			return true
		}
	}
	return false
}

// fillData gives generated ConfigMaps and Secrets the data their copyFrom and
// convertKubeConfigFrom annotations name, read as the ResourceSet's account (cl): a tenant
// copies only what its account may read. It returns the sources read (`Kind/namespace/name`),
// which the ResourceSet watches like checksumFrom's, and waitMsg when one is missing or
// unreadable.
func fillData(ctx context.Context, cl client.Reader, objects []*unstructured.Unstructured) (sources []string, waitMsg string, err error) {
	for _, o := range objects {
		if o.GetAPIVersion() != "v1" || (o.GetKind() != configMapKind && o.GetKind() != secretKind) {
			continue
		}
		what := fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		if from, ok := o.GetAnnotations()[rsv1.CopyFromAnnotation]; ok {
			ns, name, ok := strings.Cut(from, "/")
			if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return nil, "", fmt.Errorf("%w: %s of %s is %q: write <namespace>/<name>", errDataFrom, rsv1.CopyFromAnnotation, what, from)
			}
			msg, err := copyData(ctx, cl, o, client.ObjectKey{Namespace: ns, Name: name})
			if msg != "" || err != nil {
				return nil, msg, err
			}
			sources = appendRef(sources, checksumRef{o.GetKind(), ns, name})
		}
		if from, ok := o.GetAnnotations()[rsv1.ConvertKubeConfigFromAnnotation]; ok && o.GetKind() == configMapKind {
			ref, key, _ := strings.Cut(from, ":")
			ns, name, ok := strings.Cut(ref, "/")
			if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return nil, "", fmt.Errorf("%w: %s of %s is %q: write <namespace>/<name> or <namespace>/<name>:<key>", errDataFrom,
					rsv1.ConvertKubeConfigFromAnnotation, what, from)
			}
			msg, err := convertKubeConfig(ctx, cl, o, client.ObjectKey{Namespace: ns, Name: name}, key)
			if msg != "" || err != nil {
				return nil, msg, err
			}
			sources = appendRef(sources, checksumRef{secretKind, ns, name})
		}
	}
	return sources, "", nil
}

func appendRef(refs []string, ref checksumRef) []string {
	if s := ref.String(); !slices.Contains(refs, s) {
		return append(refs, s)
	}
	return refs
}

// unreadable is the wait message for a source that is missing or that the account may not
// read, empty for other errors.
func unreadable(err error, kind string, key client.ObjectKey, what string) string {
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return fmt.Sprintf("%s '%s' of %s cannot be read: %s", kind, key, what, err)
	}
	return ""
}

// copyData replaces the data of o with that of the ConfigMap or Secret (o's kind) at key.
func copyData(ctx context.Context, cl client.Reader, o *unstructured.Unstructured, key client.ObjectKey) (string, error) {
	what := fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	data := map[string]any{}
	if o.GetKind() == secretKind {
		s, err := secrets.Get(ctx, cl, key)
		if err != nil {
			return unreadable(err, secretKind, key, what), ignoreUnreadable(err)
		}
		for k, v := range s.Data {
			data[k] = base64.StdEncoding.EncodeToString(v)
		}
		if _, set, _ := unstructured.NestedString(o.Object, "type"); !set && s.Type != "" {
			o.Object["type"] = string(s.Type)
		}
		delete(o.Object, "stringData")
	} else {
		cm := &corev1.ConfigMap{}
		if err := cl.Get(ctx, key, cm); err != nil {
			return unreadable(err, configMapKind, key, what), ignoreUnreadable(err)
		}
		for k, v := range cm.Data {
			data[k] = v
		}
	}
	o.Object["data"] = data
	return "", nil
}

// convertKubeConfig sets address and ca.crt of the ConfigMap o from the kubeconfig in the Secret
// at key (dataKey, else `kubeconfig`, else `value`), keeping what the template sets.
func convertKubeConfig(ctx context.Context, cl client.Reader, o *unstructured.Unstructured, key client.ObjectKey, dataKey string) (string, error) {
	what := fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	s, err := secrets.Get(ctx, cl, key)
	if err != nil {
		return unreadable(err, secretKind, key, what), ignoreUnreadable(err)
	}
	raw, ok := s.Data[dataKey]
	if dataKey == "" {
		if raw, ok = s.Data["kubeconfig"]; !ok {
			raw, ok = s.Data["value"]
		}
	}
	if !ok {
		return fmt.Sprintf("Secret '%s' of %s has no kubeconfig under %s", key, what, orKeys(dataKey)), nil
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return "", fmt.Errorf("%w: the kubeconfig in Secret '%s' does not parse: %v", errDataFrom, key, err)
	}
	names := make([]string, 0, len(cfg.Clusters))
	for n := range cfg.Clusters {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "", fmt.Errorf("%w: the kubeconfig in Secret '%s' has no cluster", errDataFrom, key)
	}
	// The first cluster: that of the current context when there is one, else the first by name.
	slices.Sort(names)
	cluster := cfg.Clusters[names[0]]
	if c, ok := cfg.Contexts[cfg.CurrentContext]; ok && cfg.Clusters[c.Cluster] != nil {
		cluster = cfg.Clusters[c.Cluster]
	}
	data, _, _ := unstructured.NestedStringMap(o.Object, "data")
	if data == nil {
		data = map[string]string{}
	}
	if _, set := data["address"]; !set {
		data["address"] = cluster.Server
	}
	if _, set := data["ca.crt"]; !set && len(cluster.CertificateAuthorityData) > 0 {
		data["ca.crt"] = string(cluster.CertificateAuthorityData)
	}
	return "", unstructured.SetNestedStringMap(o.Object, data, "data")
}

func orKeys(key string) string {
	if key != "" {
		return "the key " + key
	}
	return "the keys kubeconfig or value"
}

func ignoreUnreadable(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil
	}
	return err
}
