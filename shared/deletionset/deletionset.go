// Package deletionset holds deletions for approval: when an object that applies (a ResourceSet)
// would delete more than its limits allow, the set of objects it would delete gets a digest, and
// an open request for that digest is made on a gate with spec.approval. The set is deleted once
// the gate's approvers approve that digest, and never when they reject it; another set needs its
// own approval.
package deletionset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// MaxListed is how many objects a DeletionSet lists.
const MaxListed = 50

// Digest is the digest of a set of object ids: sha256 of the ids, sorted, one per line.
func Digest(ids []string) string {
	sorted := slices.Sorted(slices.Values(ids))
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// New is the DeletionSet of ids on gate, pending.
func New(ids []string, gate string) *gatesapi.DeletionSet {
	sorted := slices.Sorted(slices.Values(ids))
	listed := sorted
	if len(listed) > MaxListed {
		listed = listed[:MaxListed]
	}
	return &gatesapi.DeletionSet{Digest: Digest(ids), Count: int32(len(ids)), Objects: listed, Gate: gate, State: gatesapi.DeletionPending}
}

// Verdict is what a gate says of a deletion set.
type Verdict int

const (
	// Unrequested: the gate has no request for the set.
	Unrequested Verdict = iota
	// Pending: the request for the set waits for approvals.
	Pending
	// Approved: the gate's approvers approved the set.
	Approved
	// Rejected: they rejected it, or a close request withdrew it.
	Rejected
)

// Read is the verdict of the gate on the set of that digest, and the gate's word on it (its
// Approved condition's message).
func Read(gate *unstructured.Unstructured, digest string) (Verdict, string) {
	state, _, _ := unstructured.NestedString(gate.Object, "status", "approval", "state")
	pending, _, _ := unstructured.NestedString(gate.Object, "status", "approval", "pending", "revision")
	approved, _, _ := unstructured.NestedString(gate.Object, "status", "approval", "approvedRevision")
	msg := approvedMessage(gate)
	switch {
	case state == "Approved" && approved == digest:
		return Approved, msg
	case pending != digest:
		return Unrequested, msg
	case state == "Rejected" || state == "Withdrawn":
		return Rejected, msg
	default:
		return Pending, msg
	}
}

func approvedMessage(gate *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(gate.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Approved" {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}

// HasApproval tells whether the gate has spec.approval: without approvers, an open request
// would open the gate at once, and nobody would be asked.
func HasApproval(gate *unstructured.Unstructured) bool {
	_, ok, _ := unstructured.NestedMap(gate.Object, "spec", "approval")
	return ok
}

// Request makes the open request for the set on the gate, as the user c authenticates as (the
// gate-requested-by admission policy accepts requests in one's own name only): requestedAt now,
// the digest as its revision, reason, and no duration (spec.window applies).
func Request(ctx context.Context, c client.Client, gate *unstructured.Unstructured, digest, reason string, now time.Time) error {
	user, err := WhoAmI(ctx, c)
	if err != nil {
		return err
	}
	// A request is told apart by its time, to the second: one made in the same second as the
	// gate's last request would be taken for it, and not handled.
	at := now.UTC().Truncate(time.Second)
	if last, err := time.Parse(time.RFC3339, gate.GetAnnotations()[gatesapi.OpenRequestAnnotation]); err == nil && !at.After(last) {
		at = last.Add(time.Second)
	}
	ann := map[string]any{
		gatesapi.OpenRequestAnnotation:     at.Format(time.RFC3339),
		gatesapi.OpenRequestedByAnnotation: user,
		gatesapi.OpenReasonAnnotation:      reason,
		gatesapi.OpenRevisionAnnotation:    digest,
		gatesapi.OpenDurationAnnotation:    nil,
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(gatesapi.GateGVK)
	target.SetNamespace(gate.GetNamespace())
	target.SetName(gate.GetName())
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("%s may not make the request on gate '%s': %s", user, gate.GetName(), apierrors.ReasonForError(err))
		}
		return fmt.Errorf("making the deletion request on gate '%s': %w", gate.GetName(), err)
	}
	return nil
}

// WhoAmI is the user name the API server authenticates c as (a SelfSubjectReview).
func WhoAmI(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who the controller acts as: %w", err)
	}
	return review.Status.UserInfo.Username, nil
}
