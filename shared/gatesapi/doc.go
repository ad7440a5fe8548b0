// Package gatesapi is the API side of gates: the vocabulary every controller shares (condition
// types, reasons, annotations, the Gate kind), the Gates spec that API types embed as
// `spec.gates`, and how a reference names a Gate. It imports only apimachinery, so that API
// packages can use it; evaluating gates and watching them is the runtime side, package gates.
//
// +kubebuilder:object:generate=true
package gatesapi
