package fluxsyncs

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
)

// Kind is one of Flux's kinds that can be held behind gates.
type Kind struct {
	GVK schema.GroupVersionKind
	// CRD is the name of its CustomResourceDefinition, watched so that the kind is held from the
	// moment Flux is installed, even after the gating-controller started.
	CRD string
	// SourceRef is true for kinds whose `spec.sourceRef` names a source whose artifact they apply
	// and whose `status.lastAppliedRevision` says which one they applied: the revision that waits
	// behind the gates can then be told.
	SourceRef bool
}

// Kinds are the kinds the gating-controller holds, at the API versions Flux serves as storage.
var Kinds = []Kind{
	{GVK: fluxapi.Kustomization, CRD: fluxapi.CRDName(fluxapi.Kustomization), SourceRef: true},
	{GVK: fluxapi.HelmRelease, CRD: fluxapi.CRDName(fluxapi.HelmRelease)},
	{GVK: fluxapi.ImageUpdateAutomation, CRD: fluxapi.CRDName(fluxapi.ImageUpdateAutomation)},
}

// name is the controller's name for the kind, unique in the manager.
func (k Kind) name() string { return "gates-" + k.GVK.Kind }
