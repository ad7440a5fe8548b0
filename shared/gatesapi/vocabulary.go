package gatesapi

import "k8s.io/apimachinery/pkg/runtime/schema"

// GateGVK is the kind of the objects a Gates spec refers to.
var GateGVK = schema.GroupVersionKind{Group: "gating.toolkit.fluxcd.io", Version: "v1alpha1", Kind: "Gate"}

const (
	// OpenedCondition is the condition a Gate carries: True when the gate is opened.
	OpenedCondition = "Opened"

	// BlockedCondition is set to True on a gated object while its gates keep it from fetching or
	// applying anything new; it is removed when the gates open.
	BlockedCondition = "Blocked"

	// GateClosedReason is the reason of the Blocked condition (and of Ready=False for an object
	// blocked before its first success).
	GateClosedReason = "GateClosed"

	// OpenRequestAnnotation asks a Gate to open; its value is an RFC 3339 time.
	OpenRequestAnnotation = "open.gate.fluxcd.io/requestedAt"

	// CloseRequestAnnotation asks a Gate to close; its value is an RFC 3339 time.
	CloseRequestAnnotation = "close.gate.fluxcd.io/requestedAt"

	// OpenRequestedByAnnotation names who asked to open the gate: the user the API server
	// authenticated (the gate-requested-by admission policy checks it).
	OpenRequestedByAnnotation = "open.gate.fluxcd.io/requestedBy"
	// OpenReasonAnnotation is the message of an open request.
	OpenReasonAnnotation = "open.gate.fluxcd.io/reason"
	// OpenDurationAnnotation overrides spec.window for one open request (a Go duration, `2h`).
	OpenDurationAnnotation = "open.gate.fluxcd.io/duration"
	// OpenRevisionAnnotation names the revision an open request is for: on a gate with
	// spec.approval, only responses for that revision count.
	OpenRevisionAnnotation = "open.gate.fluxcd.io/revision"

	// NextTransitionField is the Gate status field (RFC 3339) telling when the gate changes state by
	// itself next; for a closed gate it is the time it opens.
	NextTransitionField = "nextTransitionAt"

	// OpenedForRevisionField is the Gate status field set while an approval of one revision
	// opens the gate: the gate is opened for that revision only (see shared/gates).
	OpenedForRevisionField = "openedForRevision"
)
