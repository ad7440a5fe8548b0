// Package testapi is a test-only kind, `Consumer` (testing.sluice.dev/v1), that embeds the shared
// Gates spec so the shared packages are tested against a CRD generated from the same markers the
// controllers use.
// +kubebuilder:object:generate=true
// +groupName=testing.sluice.dev
// +versionName=v1
package testapi

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion of the test kind.
	GroupVersion = schema.GroupVersion{Group: "testing.sluice.dev", Version: "v1"}
	// SchemeBuilder adds the test kind to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the test kind to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
