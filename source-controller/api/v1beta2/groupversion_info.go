// Package v1beta2 serves HelmChart (the version of Flux's HelmChart examples) and OCIRepository
// (the version the ResourceSet examples use) as source.toolkit.fluxcd.io/v1beta2, with the same schema as v1
// (the storage version); the API server converts between them.
// +kubebuilder:object:generate=true
// +groupName=source.toolkit.fluxcd.io
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "source.toolkit.fluxcd.io", Version: "v1beta2"}
	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
