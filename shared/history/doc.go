// Package history is the `status.history` of the objects that apply (ResourceSet,
// ManifestGeneration), in the shape of Flux's Kustomization and flux-operator's ResourceSet: the
// last outcomes, each with when it was first and last reached. A gate's promotion reads from it
// when a revision was applied (gating-controller, docs/gate.md).
//
// +kubebuilder:object:generate=true
package history
