package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/deletionset"
	"github.com/sluice-gitops/sluice/shared/owner"
)

// The deletion request on the gate (a patch, and the SelfSubjectReview that says in whose name
// it is made) is made as the object's account, whose RBAC decides; the controller's own
// identity, for objects of its namespace without an account, may do everything already.

// Guard (owner.BuildGuard) holds a sync that would delete more of the inventory than
// spec.maxPrune (else --max-prune) allows: one mistaken commit (a path emptied, a generator that
// prints nothing) then costs a condition rather than the environment. With
// spec.deletionApproval, the set is put to the gate's approvers, and deleted once they approve it.
func (r *ManifestGenerationReconciler) Guard(ctx context.Context, obj *generatorv1.ManifestGeneration, inventory []apply.Entry,
	objects []*unstructured.Unstructured, revision string) (*owner.Held, error) {
	if !obj.GetPrune() {
		obj.Status.PendingDeletion = nil
		return nil, nil
	}
	msg, deleted, err := owner.PruneLimit(obj.Spec.MaxPrune, r.DefaultMaxPrune, revision, obj.Namespace, inventory, objects)
	if err != nil {
		return &owner.Held{Reason: generatorv1.BuildFailedReason, Message: err.Error()}, nil
	}
	if msg == "" {
		obj.Status.PendingDeletion = nil
		return nil, nil
	}
	msg += ": nothing is applied or pruned; raise spec.maxPrune, or set spec.deletionApproval to put the deletion to a gate's approvers"
	if obj.Spec.DeletionApproval == nil {
		return &owner.Held{Reason: generatorv1.PruneLimitExceededReason, Message: msg}, nil
	}
	approval := &deletionset.Approval{Reader: r.Client, EventRecorder: r.EventRecorder,
		Requester: func(ctx context.Context) (client.Client, error) {
			cl, err := r.owners().ClientFor(ctx, obj)
			return cl.Client, err
		}}
	obj.SetGroupVersionKind(generatorv1.GroupVersion.WithKind(generatorv1.ManifestGenerationKind))
	d, err := approval.Decide(ctx, obj, obj.Spec.DeletionApproval.Gate, deleted, msg)
	if err != nil {
		return nil, err
	}
	obj.Status.PendingDeletion = d.Set
	if d.Approved {
		return nil, nil
	}
	return &owner.Held{Reason: d.Reason, Message: d.Message}, nil
}
