package fluxsyncs

import "k8s.io/apimachinery/pkg/runtime/schema"

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
	{GVK: schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
		CRD: "kustomizations.kustomize.toolkit.fluxcd.io", SourceRef: true},
	{GVK: schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"},
		CRD: "helmreleases.helm.toolkit.fluxcd.io"},
	{GVK: schema.GroupVersionKind{Group: "image.toolkit.fluxcd.io", Version: "v1", Kind: "ImageUpdateAutomation"},
		CRD: "imageupdateautomations.image.toolkit.fluxcd.io"},
}

// name is the controller's name for the kind, unique in the manager.
func (k Kind) name() string { return "gates-" + k.GVK.Kind }
