// Package v1alpha1 contains the generator.toolkit.fluxcd.io/v1alpha1 API of the
// manifest-generator: ManifestGeneration and ManifestUpdate.
// +kubebuilder:object:generate=true
// +groupName=generator.toolkit.fluxcd.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "generator.toolkit.fluxcd.io", Version: "v1alpha1"}

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
