package fluxreceiver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// defaultAPIVersions are the API versions of the kinds spec.resources[].kind accepts, taken when
// an entry names no apiVersion. Flux has defaults for its source kinds and ImageRepository only
// (the others need an apiVersion there); here every kind has one.
var defaultAPIVersions = map[string]string{
	"Bucket":                   "source.toolkit.fluxcd.io/v1",
	"GitRepository":            "source.toolkit.fluxcd.io/v1",
	"HelmChart":                "source.toolkit.fluxcd.io/v1",
	"HelmRepository":           "source.toolkit.fluxcd.io/v1",
	"OCIRepository":            "source.toolkit.fluxcd.io/v1",
	"ExternalArtifact":         "source.toolkit.fluxcd.io/v1",
	"ArtifactGenerator":        "source.extensions.fluxcd.io/v1beta1",
	"Kustomization":            "kustomize.toolkit.fluxcd.io/v1",
	"HelmRelease":              "helm.toolkit.fluxcd.io/v2",
	"ImageRepository":          "image.toolkit.fluxcd.io/v1",
	"ImagePolicy":              "image.toolkit.fluxcd.io/v1",
	"ImageUpdateAutomation":    "image.toolkit.fluxcd.io/v1",
	"ManifestGeneration":       "generator.toolkit.fluxcd.io/v1alpha1",
	"ResourceSet":              "fluxcd.controlplane.io/v1",
	"ResourceSetInputProvider": "fluxcd.controlplane.io/v1",
}

// gitRepository is the kind whose objects are routed by the pushed repository and reference.
var gitRepository = schema.GroupKind{Group: "source.toolkit.fluxcd.io", Kind: "GitRepository"}

// gvkOf is the group, version and kind of an entry of spec.resources: its apiVersion, or the
// kind's default. The group must be the kind's own: the controller may patch those kinds only.
func gvkOf(ref notificationv1.CrossNamespaceObjectReference) (schema.GroupVersionKind, error) {
	def, ok := defaultAPIVersions[ref.Kind]
	if !ok {
		return schema.GroupVersionKind{}, fmt.Errorf("kind %q cannot be asked to reconcile", ref.Kind)
	}
	apiVersion := ref.APIVersion
	if apiVersion == "" {
		apiVersion = def
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("apiVersion %q of %s/%s: %w", ref.APIVersion, ref.Kind, ref.Name, err)
	}
	if want := schema.FromAPIVersionAndKind(def, ref.Kind).Group; gv.Group != want {
		return schema.GroupVersionKind{}, fmt.Errorf("apiVersion %q of %s/%s is not of the group %s (e.g. %s)",
			ref.APIVersion, ref.Kind, ref.Name, want, def)
	}
	return gv.WithKind(ref.Kind), nil
}
