// Package v1 contains the notification.toolkit.fluxcd.io/v1 API as the gating-controller serves
// it: Flux's Receiver, field for field (docs/flux-receiver.md).
// +kubebuilder:object:generate=true
// +groupName=notification.toolkit.fluxcd.io
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "notification.toolkit.fluxcd.io", Version: "v1"}

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
