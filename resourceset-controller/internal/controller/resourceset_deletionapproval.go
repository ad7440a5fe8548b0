package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/deletionset"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create

// deletionVerdict is what spec.deletionApproval says of a deletion beyond spec.maxPrune.
type deletionVerdict struct {
	// approved: the gate's approvers approved exactly this set; it may be deleted.
	approved bool
	// reason and msg are Ready's while the set waits or was rejected.
	reason, msg string
}

// deletionApproval puts the objects the build would delete beyond spec.maxPrune (limitMsg says
// how many) to the gate of spec.deletionApproval: it makes the open request for the set's digest
// the first time, then reads the gate's verdict. status.pendingDeletion shows the set.
func (r *ResourceSetReconciler) deletionApproval(ctx context.Context, obj *rsv1.ResourceSet, deleted []string, limitMsg string) (deletionVerdict, error) {
	name := obj.Spec.DeletionApproval.Gate
	set := deletionset.New(deleted, name)
	limitMsg, _, _ = strings.Cut(limitMsg, ": nothing is applied")
	gate := &unstructured.Unstructured{}
	gate.SetGroupVersionKind(gatesapi.GateGVK)
	err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: name}, gate)
	switch {
	case apierrors.IsNotFound(err):
		set.Message = fmt.Sprintf("%s: the gate '%s' of spec.deletionApproval does not exist; nothing is applied or pruned", limitMsg, name)
		obj.Status.PendingDeletion = set
		return deletionVerdict{reason: rsv1.DeletionPendingReason, msg: set.Message}, nil
	case err != nil:
		return deletionVerdict{}, err
	case !deletionset.HasApproval(gate):
		set.Message = fmt.Sprintf("%s: the gate '%s' of spec.deletionApproval has no spec.approval, so nobody would be asked; nothing is applied or pruned", limitMsg, name)
		obj.Status.PendingDeletion = set
		return deletionVerdict{reason: rsv1.DeletionPendingReason, msg: set.Message}, nil
	}
	verdict, word := deletionset.Read(gate, set.Digest)
	switch verdict {
	case deletionset.Approved:
		r.EventRecorder.Event(obj, corev1.EventTypeNormal, rsv1.DeletionApprovedReason,
			fmt.Sprintf("the deletion of %s (%s) is approved on gate '%s' (%s): deleting them", objects(set.Count), set.Digest, name, word))
		obj.Status.PendingDeletion = nil
		return deletionVerdict{approved: true}, nil
	case deletionset.Rejected:
		set.State = gatesapi.DeletionRejected
		set.Message = fmt.Sprintf("%s: the deletion of %s (%s) was %s on gate '%s'; every object is kept until the set changes",
			limitMsg, objects(set.Count), set.Digest, word, name)
		obj.Status.PendingDeletion = set
		return deletionVerdict{reason: rsv1.DeletionRejectedReason, msg: set.Message}, nil
	case deletionset.Unrequested:
		cl, err := r.owners().ClientFor(ctx, obj)
		if err != nil {
			return deletionVerdict{}, err
		}
		reason := fmt.Sprintf("ResourceSet %s/%s would delete %s: %s", obj.Namespace, obj.Name, objects(set.Count), listed(set))
		if err := deletionset.Request(ctx, cl, gate, set.Digest, reason, time.Now()); err != nil {
			return deletionVerdict{}, err
		}
		r.EventRecorder.Event(obj, corev1.EventTypeNormal, rsv1.DeletionRequestedReason,
			fmt.Sprintf("the deletion of %s (%s) is put to the approvers of gate '%s'", objects(set.Count), set.Digest, name))
		word = "waiting for approval"
	}
	set.Message = fmt.Sprintf("%s: the deletion of %s (%s) waits for approval on gate '%s' (%s); nothing is applied or pruned until then",
		limitMsg, objects(set.Count), set.Digest, name, word)
	obj.Status.PendingDeletion = set
	return deletionVerdict{reason: rsv1.DeletionPendingReason, msg: set.Message}, nil
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
