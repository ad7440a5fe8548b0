// Package fluxapi names the kinds of the GitOps Toolkit APIs that Sluice's controllers read or
// patch without importing their types: Flux's (sources, Kustomization, HelmRelease, the image
// automation), and those Sluice serves from one module to the others (ManifestGeneration,
// ResourceSet). Their versions are the ones Flux and Sluice store; a module that owns a kind's
// Go types (the source-controller its sources) uses those.
package fluxapi

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API groups.
const (
	SourceGroup           = "source.toolkit.fluxcd.io"
	SourceExtensionsGroup = "source.extensions.fluxcd.io"
	KustomizeGroup        = "kustomize.toolkit.fluxcd.io"
	HelmGroup             = "helm.toolkit.fluxcd.io"
	ImageGroup            = "image.toolkit.fluxcd.io"
	GeneratorGroup        = "generator.toolkit.fluxcd.io"
	ControlPlaneGroup     = "fluxcd.controlplane.io"
)

// The versions read and patched.
var (
	SourceV1                = schema.GroupVersion{Group: SourceGroup, Version: "v1"}
	SourceExtensionsV1beta1 = schema.GroupVersion{Group: SourceExtensionsGroup, Version: "v1beta1"}
	KustomizeV1             = schema.GroupVersion{Group: KustomizeGroup, Version: "v1"}
	HelmV2                  = schema.GroupVersion{Group: HelmGroup, Version: "v2"}
	ImageV1                 = schema.GroupVersion{Group: ImageGroup, Version: "v1"}
	GeneratorV1alpha1       = schema.GroupVersion{Group: GeneratorGroup, Version: "v1alpha1"}
	ControlPlaneV1          = schema.GroupVersion{Group: ControlPlaneGroup, Version: "v1"}
)

// The kinds.
var (
	GitRepository    = SourceV1.WithKind("GitRepository")
	HelmRepository   = SourceV1.WithKind("HelmRepository")
	HelmChart        = SourceV1.WithKind("HelmChart")
	OCIRepository    = SourceV1.WithKind("OCIRepository")
	Bucket           = SourceV1.WithKind("Bucket")
	ExternalArtifact = SourceV1.WithKind("ExternalArtifact")

	ArtifactGenerator = SourceExtensionsV1beta1.WithKind("ArtifactGenerator")

	Kustomization = KustomizeV1.WithKind("Kustomization")
	HelmRelease   = HelmV2.WithKind("HelmRelease")

	ImageRepository       = ImageV1.WithKind("ImageRepository")
	ImagePolicy           = ImageV1.WithKind("ImagePolicy")
	ImageUpdateAutomation = ImageV1.WithKind("ImageUpdateAutomation")

	ManifestGeneration = GeneratorV1alpha1.WithKind("ManifestGeneration")
	ManifestUpdate     = GeneratorV1alpha1.WithKind("ManifestUpdate")

	ResourceSet              = ControlPlaneV1.WithKind("ResourceSet")
	ResourceSetInputProvider = ControlPlaneV1.WithKind("ResourceSetInputProvider")
)

// Resource is the kind's resource: the lower-case plural of its name (gitrepositories), as
// every one of these kinds' CRDs names it.
func Resource(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	plural, _ := apimeta.UnsafeGuessKindToResource(gvk)
	return plural
}

// CRDName is the name of the kind's CustomResourceDefinition: <plural>.<group>.
func CRDName(gvk schema.GroupVersionKind) string {
	r := Resource(gvk)
	return r.Resource + "." + r.Group
}
