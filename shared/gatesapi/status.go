package gatesapi

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GatesStatus is what a gated object embeds as `status.gates`: how its gates hold it, readable at
// a glance (the GATES print column) and by tools such as `kubectl gate ui`. It is absent on an
// object without gates.
type GatesStatus struct {
	// State is `open`, or `closed (<gate>, ...)` naming the gates that hold the object (a gate of
	// another namespace as `namespace/name`).
	// +optional
	State string `json:"state,omitempty"`

	// HeldSince is when the gates started holding the object; unset while they are open.
	// +optional
	HeldSince *metav1.Time `json:"heldSince,omitempty"`

	// WaitingRevision is the revision that waits behind the closed gates, when the controller knows
	// it (e.g. the commit a held GitRepository would fetch); unset while the gates are open.
	// +optional
	WaitingRevision string `json:"waitingRevision,omitempty"`
}

const (
	// GatesOpenState is the State of an object whose gates let it go ahead.
	GatesOpenState = "open"

	// HeldReason is the reason of the event recorded when the gates start holding an object.
	HeldReason = "Held"

	// ReleasedReason is the reason of the event recorded when the gates release a held object.
	ReleasedReason = "Released"
)
