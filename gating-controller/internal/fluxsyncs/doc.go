// Package fluxsyncs holds Flux's own syncs (Kustomization, HelmRelease, ImageUpdateAutomation)
// behind Sluice gates without any change to Flux: an object names its gates with the annotation
// gatesapi.GatesAnnotation; while they are closed the gating-controller suspends it
// (`spec.suspend: true`, so Flux finishes the reconciliation in flight and then pauses), and when
// they open it lifts that suspend and asks Flux for a reconcile at once.
//
// What the controller did is recorded on the object (the annotations of gatesapi/held.go), never
// in memory, so a restarted controller releases what an earlier one held. A suspend it did not
// set (no gatesapi.SuspendedAnnotation) is the user's and is never changed.
package fluxsyncs
