// Package v1 contains the fluxcd.controlplane.io/v1 API of the resourceset-controller:
// ResourceSet and ResourceSetInputProvider.
// +kubebuilder:object:generate=true
// +groupName=fluxcd.controlplane.io
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "fluxcd.controlplane.io", Version: "v1"}

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
