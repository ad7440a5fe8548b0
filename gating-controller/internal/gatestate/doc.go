// Package gatestate decides the state of a gate (docs/gate.md, "The state of a gate"): the
// open and close requests of its annotations (TakeRequests, ApplyRequest), the precedence of
// the request in force, its GateKeepers and its default (Inputs), its next change, and the
// messages that say why (Decide, Cause). It reads and writes no object: the gating-controller
// and `kubectl gate ui` give it the gate and its compiled keepers.
package gatestate
