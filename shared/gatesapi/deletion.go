package gatesapi

// DeletionApproval puts the deletions an object's limits stop (a ResourceSet's spec.maxPrune) to
// the approvers of a gate: the object opens a request on the gate for the set of objects it
// would delete, and deletes exactly that set once the request is approved.
type DeletionApproval struct {
	// Gate names a Gate of the object's namespace, with spec.approval.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Gate string `json:"gate"`
}

// Reasons of the conditions and events of an object whose deletion waits on a gate.
const (
	// DeletionPendingReason: Ready=False while the set waits for the gate's approvals.
	DeletionPendingReason = "DeletionPending"
	// DeletionRejectedReason: Ready=False once the approvers rejected the set.
	DeletionRejectedReason = "DeletionRejected"
	// DeletionRequestedReason: the event of a set put to the gate.
	DeletionRequestedReason = "DeletionRequested"
	// DeletionApprovedReason: the event of a set approved, and deleted.
	DeletionApprovedReason = "DeletionApproved"
)

// The states of a DeletionSet.
const (
	// DeletionPending: the request waits for its approvals.
	DeletionPending = "Pending"
	// DeletionRejected: the request was rejected (or withdrawn): nothing is deleted.
	DeletionRejected = "Rejected"
)

// DeletionSet is a set of objects whose deletion waits on a gate's approvers.
type DeletionSet struct {
	// Digest identifies the set: `sha256:<hex>` of its objects' ids, one per line, sorted. The
	// request on the gate is for this revision; an approval of another set does not count.
	Digest string `json:"digest"`

	// Count is how many objects the set has.
	Count int32 `json:"count"`

	// Objects are the set's objects (`<namespace>_<name>_<group>_<kind>`), at most 50.
	// +optional
	Objects []string `json:"objects,omitempty"`

	// Gate is the gate the request is made on.
	Gate string `json:"gate"`

	// State is Pending or Rejected.
	State string `json:"state"`

	// Message says what the deletion waits for, or who rejected it.
	// +optional
	Message string `json:"message,omitempty"`
}
