package fluxreceiver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
)

// defaultAPIVersions are the API versions of the kinds spec.resources[].kind accepts, taken when
// an entry names no apiVersion. Flux has defaults for its source kinds and ImageRepository only
// (the others need an apiVersion there); here every kind has one.
var defaultAPIVersions = apiVersions(
	fluxapi.Bucket, fluxapi.GitRepository, fluxapi.HelmChart, fluxapi.HelmRepository, fluxapi.OCIRepository,
	fluxapi.ExternalArtifact, fluxapi.ArtifactGenerator, fluxapi.Kustomization, fluxapi.HelmRelease,
	fluxapi.ImageRepository, fluxapi.ImagePolicy, fluxapi.ImageUpdateAutomation, fluxapi.ManifestGeneration,
	fluxapi.ResourceSet, fluxapi.ResourceSetInputProvider,
)

// apiVersions maps each kind to its apiVersion.
func apiVersions(kinds ...schema.GroupVersionKind) map[string]string {
	m := make(map[string]string, len(kinds))
	for _, k := range kinds {
		m[k.Kind] = k.GroupVersion().String()
	}
	return m
}

// gitRepository is the kind whose objects are routed by the pushed repository and reference.
var gitRepository = fluxapi.GitRepository.GroupKind()

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
