package main

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// How each kind of the flow is suspended, reconciled now, and told so. Flux's kinds and Sluice's
// sources and generators have spec.suspend; flux-operator's kinds (ResourceSet and its input
// providers) are suspended by an annotation instead; a ManifestUpdate follows its
// ManifestGeneration and cannot be suspended alone, and an ExternalArtifact is written by its
// producer. Every other kind reconciles on a new reconcile.fluxcd.io/requestedAt, as
// `flux reconcile` writes it.
const (
	reconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"
	// disabledAnnotation is flux-operator's: "disabled" stops the reconciliation.
	disabledAnnotation = "fluxcd.controlplane.io/reconcile"
	disabledValue      = "disabled"
)

type suspendStyle int

const (
	noSuspend suspendStyle = iota
	suspendField
	suspendAnnotation
)

func suspendStyleOf(kind string) suspendStyle {
	switch kind {
	case "ResourceSet", "ResourceSetInputProvider":
		return suspendAnnotation
	case "ManifestUpdate", "ExternalArtifact":
		return noSuspend
	}
	return suspendField
}

// suspended reads the object's suspension as its kind keeps it.
func suspended(kind string, obj *unstructured.Unstructured) bool {
	switch suspendStyleOf(kind) {
	case suspendField:
		v, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
		return v
	case suspendAnnotation:
		return obj.GetAnnotations()[disabledAnnotation] == disabledValue
	}
	return false
}

// suspendPatch is the JSON merge patch that suspends or resumes an object of kind; ok is false
// for a kind that cannot be suspended. Resuming removes the field or annotation, as
// `flux resume` leaves an object as it was before `flux suspend`.
func suspendPatch(kind string, suspend bool) ([]byte, bool) {
	var patch map[string]any
	switch suspendStyleOf(kind) {
	case suspendField:
		var v any
		if suspend {
			v = true
		}
		patch = map[string]any{"spec": map[string]any{"suspend": v}}
	case suspendAnnotation:
		var v any
		if suspend {
			v = disabledValue
		}
		patch = map[string]any{"metadata": map[string]any{"annotations": map[string]any{disabledAnnotation: v}}}
	default:
		return nil, false
	}
	data, _ := json.Marshal(patch)
	return data, true
}

// reconcilePatch asks the object's controller to reconcile it now.
func reconcilePatch(now time.Time) []byte {
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		reconcileRequestAnnotation: now.UTC().Format(time.RFC3339Nano)}}})
	return data
}

// reconciled says whether a controller reconciles objects of kind on request: an
// ExternalArtifact only changes when its producer does.
func reconciled(kind string) bool { return kind != "ExternalArtifact" }
