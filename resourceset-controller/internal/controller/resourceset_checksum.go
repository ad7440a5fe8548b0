package controller

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/secrets"
)

// errChecksumFrom marks a checksumFrom annotation that does not parse: no retry can help.
var errChecksumFrom = errors.New("invalid " + rsv1.ChecksumFromAnnotation)

// checksumRef is one entry of a checksumFrom annotation.
type checksumRef struct{ kind, namespace, name string }

func (c checksumRef) String() string { return c.kind + "/" + c.namespace + "/" + c.name }

// parseChecksumFrom reads `Kind/namespace/name, ...` (spaces and newlines around entries are
// ignored).
func parseChecksumFrom(value string) ([]checksumRef, error) {
	var refs []checksumRef
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, "/")
		if len(parts) != 3 || (parts[0] != configMapKind && parts[0] != secretKind) || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("%w entry %q: write ConfigMap/<namespace>/<name> or Secret/<namespace>/<name>", errChecksumFrom, entry)
		}
		refs = append(refs, checksumRef{parts[0], parts[1], parts[2]})
	}
	return refs, nil
}

// writeChecksums sets, beside every checksumFrom annotation of the objects (on any
// metadata.annotations map: the object's or a pod template's), the digest of the data of the
// ConfigMaps and Secrets it names. Those the ResourceSet generates are read from the objects
// about to be applied; the others from the cluster, as the ResourceSet's account (cl), and are
// returned as the external refs. waitMsg says which one is missing.
func writeChecksums(ctx context.Context, cl client.Reader, objects []*unstructured.Unstructured, namespace string) (external []string, waitMsg string, err error) {
	rendered := map[string]*unstructured.Unstructured{}
	for _, o := range objects {
		if o.GetAPIVersion() == "v1" && (o.GetKind() == configMapKind || o.GetKind() == secretKind) {
			ns := o.GetNamespace()
			if ns == "" {
				ns = namespace // where the apply puts it
			}
			rendered[checksumRef{o.GetKind(), ns, o.GetName()}.String()] = o
		}
	}
	for _, o := range objects {
		var failure error
		walkAnnotations(o.Object, func(annotations map[string]any) {
			value, ok := annotations[rsv1.ChecksumFromAnnotation].(string)
			if !ok || failure != nil || waitMsg != "" {
				return
			}
			refs, err := parseChecksumFrom(value)
			if err != nil {
				failure = fmt.Errorf("%s/%s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				return
			}
			h := sha256.New()
			for _, ref := range refs {
				data, err := checksumData(ctx, cl, rendered, ref)
				if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
					waitMsg = fmt.Sprintf("%s of %s/%s/%s: %s '%s/%s' cannot be read: %s", rsv1.ChecksumFromAnnotation,
						o.GetKind(), o.GetNamespace(), o.GetName(), ref.kind, ref.namespace, ref.name, err)
					return
				}
				if err != nil {
					failure = err
					return
				}
				if _, ok := rendered[ref.String()]; !ok && !slices.Contains(external, ref.String()) {
					external = append(external, ref.String())
				}
				fmt.Fprintf(h, "%s\n", ref)
				keys := make([]string, 0, len(data))
				for k := range data {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Fprintf(h, "%s=%d:%s\n", k, len(data[k]), data[k])
				}
			}
			annotations[rsv1.ChecksumAnnotation] = fmt.Sprintf("sha256:%x", h.Sum(nil))
		})
		if failure != nil {
			return nil, "", failure
		}
		if waitMsg != "" {
			return nil, waitMsg, nil
		}
	}
	sort.Strings(external)
	return external, "", nil
}

// hasChecksumFrom says whether an object carries a checksumFrom annotation anywhere.
func hasChecksumFrom(objects []*unstructured.Unstructured) bool {
	found := false
	for _, o := range objects {
		walkAnnotations(o.Object, func(a map[string]any) {
			_, ok := a[rsv1.ChecksumFromAnnotation]
			found = found || ok
		})
	}
	return found
}

// walkAnnotations calls f with every metadata.annotations map under m (the object's own
// included).
func walkAnnotations(m map[string]any, f func(map[string]any)) {
	for k, v := range m {
		switch child := v.(type) {
		case map[string]any:
			if k == "metadata" {
				if a, ok := child["annotations"].(map[string]any); ok {
					f(a)
				}
			}
			walkAnnotations(child, f)
		case []any:
			for _, item := range child {
				if im, ok := item.(map[string]any); ok {
					walkAnnotations(im, f)
				}
			}
		}
	}
}

// checksumData is the data of a ConfigMap or Secret, as bytes: from the objects about to be
// applied when the ResourceSet generates it, else from the cluster.
func checksumData(ctx context.Context, cl client.Reader, rendered map[string]*unstructured.Unstructured, ref checksumRef) (map[string]string, error) {
	out := map[string]string{}
	if o, ok := rendered[ref.String()]; ok {
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for k, v := range data {
			if ref.kind == secretKind {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					return nil, fmt.Errorf("%s data %q: %w", ref, k, err)
				}
				v = string(b)
			}
			out[k] = v
		}
		if ref.kind == secretKind {
			plain, _, _ := unstructured.NestedStringMap(o.Object, "stringData")
			for k, v := range plain {
				out[k] = v
			}
		}
		return out, nil
	}
	key := client.ObjectKey{Namespace: ref.namespace, Name: ref.name}
	if ref.kind == secretKind {
		s, err := secrets.Get(ctx, cl, key)
		if err != nil {
			return nil, err
		}
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	cm := &corev1.ConfigMap{}
	if err := cl.Get(ctx, key, cm); err != nil {
		return nil, err
	}
	for k, v := range cm.Data {
		out[k] = v
	}
	return out, nil
}
