// Package gates is the runtime side of gates, for every controller whose objects wait on them:
// the evaluation of a Gates spec (package gatesapi) against the Gate objects in the API, the
// Blocked condition it leads to (Hold), and the controller-runtime index and watch that release
// consumers as soon as a gate opens.
//
// Gate objects are read as unstructured so that no controller imports the gating-controller.
package gates
