package status

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/conditiongauge"
)

// Finisher starts and finishes the reconciles of one kind: it holds what every finish needs, the
// client that patches, the readiness metrics and the field owner, so that a reconciler names them
// once. It plays the part of fluxcd/pkg/runtime/patch's Helper in Flux's controllers, with the
// one-request status patch of Patcher.
type Finisher struct {
	Client client.Client
	// Metrics records the gotk_reconcile_condition gauges; nil records none.
	Metrics *conditiongauge.Gauges
	// FieldOwner is the field manager of the patches: the controller's name.
	FieldOwner string
}

// Fields point into the status fields that the start and the finish keep. API types do not
// import this package, so each kind says where its fields are.
type Fields struct {
	ObservedGeneration *int64
	// LastHandledReconcileAt echoes reconcile.fluxcd.io/requestedAt.
	LastHandledReconcileAt *string
}

// Reconcile is one reconcile of one object, from Finisher.Begin to Finish.
type Reconcile struct {
	ctx      context.Context
	finisher Finisher
	obj      Object
	fields   Fields
	patcher  *Patcher
}

// Begin starts the reconcile of obj, just read from the API server. Every change made to obj from
// here on is written by Finish, which is deferred at once; the preamble comes next:
//
//	rec := finisher.Begin(ctx, obj, status.Fields{...})
//	defer rec.Finish(&retErr)
//	if done, err := rec.Preamble(status.Preamble{...}); done {
//		return ctrl.Result{}, err
//	}
func (f Finisher) Begin(ctx context.Context, obj Object, fields Fields) *Reconcile {
	return &Reconcile{ctx: ctx, finisher: f, obj: obj, fields: fields, patcher: NewPatcher(obj, f.Client)}
}

// Finish writes the outcome of the reconcile, *retErr, as Finalize does, and replaces *retErr with
// what controller-runtime is to see: redacted, with a failed patch added, and nil for an object
// deleted while finishing.
func (r *Reconcile) Finish(retErr *error) {
	*retErr = Finalize(r.ctx, r.patcher, r.obj, r.fields.ObservedGeneration, *retErr, r.finisher.Metrics, r.finisher.FieldOwner)
}

// Written says, after Finish, that its patch succeeded: the API holds the object as Finish wrote
// it (records beside the object that the old status named may go).
func (r *Reconcile) Written() bool { return r.patcher.written }
