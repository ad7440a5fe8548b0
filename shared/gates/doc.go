// Package gates is the contract between the gating-controller and every controller whose objects
// wait on gates: the vocabulary (condition types, reasons, annotations), the embeddable Gates spec
// type, the evaluation of a Gates spec against the Gate objects in the API, and the
// controller-runtime index and watch that release consumers as soon as a gate opens.
//
// Gate objects are read as unstructured so that no controller imports the gating-controller.
//
// +kubebuilder:object:generate=true
package gates
