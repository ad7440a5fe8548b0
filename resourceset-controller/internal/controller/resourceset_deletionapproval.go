package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/deletionset"
)

// The deletion request on the gate (a patch, and the SelfSubjectReview that says in whose name
// it is made) is made as the object's account, whose RBAC decides; the controller's own
// identity, for objects of its namespace without an account, may do everything already.

// deletionApproval puts the objects the build would delete beyond spec.maxPrune (limitMsg says
// how many) to the gate of spec.deletionApproval, as the ResourceSet's account; status.
// pendingDeletion shows the set while it waits or after its rejection.
func (r *ResourceSetReconciler) deletionApproval(ctx context.Context, obj *rsv1.ResourceSet, deleted []string, limitMsg string) (deletionset.Decision, error) {
	approval := &deletionset.Approval{Reader: r.Client, EventRecorder: r.EventRecorder,
		Requester: func(ctx context.Context) (client.Client, error) {
			cl, err := r.owners().ClientFor(ctx, obj)
			return cl.Client, err
		}}
	obj.SetGroupVersionKind(rsv1.GroupVersion.WithKind(rsv1.ResourceSetKind))
	d, err := approval.Decide(ctx, obj, obj.Spec.DeletionApproval.Gate, deleted, limitMsg)
	if err == nil {
		obj.Status.PendingDeletion = d.Set
	}
	return d, err
}
