package deletionset

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// Reasons of the conditions and events, gatesapi's.
const (
	PendingReason   = gatesapi.DeletionPendingReason
	RejectedReason  = gatesapi.DeletionRejectedReason
	RequestedReason = gatesapi.DeletionRequestedReason
	ApprovedReason  = gatesapi.DeletionApprovedReason
)

// Approval puts a deletion beyond an object's limits to the approvers of a gate.
type Approval struct {
	// Reader reads the gate.
	Reader client.Reader
	// Requester makes the request on the gate: a client acting as the object's account.
	Requester func(ctx context.Context) (client.Client, error)
	// EventRecorder records the requests and approvals on the object.
	EventRecorder record.EventRecorder
}

// Verdict of Decide: Approved lets the deletion through; otherwise Reason and Message are the
// object's Ready condition, and Set its status.pendingDeletion.
type Decision struct {
	Approved        bool
	Reason, Message string
	Set             *gatesapi.DeletionSet
}

// Decide puts the objects of deleted (ids) that the object obj would delete beyond its limit
// (limitMsg says how many, and which limit) to the gate named gate of its namespace: it makes
// the open request for the set's digest the first time, then reads the gate's verdict.
func (a *Approval) Decide(ctx context.Context, obj client.Object, gate string, deleted []string, limitMsg string) (Decision, error) {
	set := New(deleted, gate)
	limitMsg, _, _ = strings.Cut(limitMsg, ": nothing is applied")
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(gatesapi.GateGVK)
	err := a.Reader.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: gate}, g)
	switch {
	case apierrors.IsNotFound(err):
		set.Message = fmt.Sprintf("%s: the gate '%s' of spec.deletionApproval does not exist; nothing is applied or pruned", limitMsg, gate)
		return Decision{Reason: PendingReason, Message: set.Message, Set: set}, nil
	case err != nil:
		return Decision{}, err
	case !HasApproval(g):
		set.Message = fmt.Sprintf("%s: the gate '%s' of spec.deletionApproval has no spec.approval, so nobody would be asked; nothing is applied or pruned", limitMsg, gate)
		return Decision{Reason: PendingReason, Message: set.Message, Set: set}, nil
	}
	verdict, word := Read(g, set.Digest)
	switch verdict {
	case Approved:
		a.EventRecorder.Event(obj, corev1.EventTypeNormal, ApprovedReason,
			fmt.Sprintf("the deletion of %s (%s) is approved on gate '%s' (%s): deleting them", objects(set.Count), set.Digest, gate, word))
		return Decision{Approved: true}, nil
	case Rejected:
		set.State = gatesapi.DeletionRejected
		set.Message = fmt.Sprintf("%s: the deletion of %s (%s) was %s on gate '%s'; every object is kept until the set changes",
			limitMsg, objects(set.Count), set.Digest, word, gate)
		return Decision{Reason: RejectedReason, Message: set.Message, Set: set}, nil
	case Unrequested:
		cl, err := a.Requester(ctx)
		if err != nil {
			return Decision{}, err
		}
		reason := fmt.Sprintf("%s %s/%s would delete %s: %s", kind, obj.GetNamespace(), obj.GetName(), objects(set.Count), listed(set))
		if err := Request(ctx, cl, g, set.Digest, reason, time.Now()); err != nil {
			return Decision{}, err
		}
		a.EventRecorder.Event(obj, corev1.EventTypeNormal, RequestedReason,
			fmt.Sprintf("the deletion of %s (%s) is put to the approvers of gate '%s'", objects(set.Count), set.Digest, gate))
		word = "waiting for approval"
	}
	set.Message = fmt.Sprintf("%s: the deletion of %s (%s) waits for approval on gate '%s' (%s); nothing is applied or pruned until then",
		limitMsg, objects(set.Count), set.Digest, gate, word)
	return Decision{Reason: PendingReason, Message: set.Message, Set: set}, nil
}

// listed names the first objects of the set, for the request's reason.
func listed(set *gatesapi.DeletionSet) string {
	const shown = 5
	if len(set.Objects) <= shown {
		return strings.Join(set.Objects, ", ")
	}
	return strings.Join(set.Objects[:shown], ", ") + fmt.Sprintf(", and %d more", int(set.Count)-shown)
}

// objects is "1 object", "9 objects".
func objects(n int32) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}
