package status

import (
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Preamble is what a kind tells the start every reconcile shares.
type Preamble struct {
	// Finalizer holds a deleted object until Cleanup succeeds; "" for a kind that leaves nothing
	// behind, which gets no finalizer.
	Finalizer string
	// Cleanup removes what a deleted object leaves behind (its artifacts, its applied objects);
	// nil: nothing.
	Cleanup func() error
	// Suspended pauses the object (spec.suspend, or an annotation); SuspendedMessage is logged.
	Suspended        bool
	SuspendedMessage string
}

// Preamble runs what every reconciler of every controller does before its own steps, in this
// order:
//
//  1. deletion: Cleanup, then the finalizer goes; the reconcile ends there;
//  2. reconcile.fluxcd.io/requestedAt is echoed in lastHandledReconcileAt, also while suspended:
//     the request was seen, and a suspended object says so;
//  3. the finalizer is added, also while suspended: a suspended object that is deleted still
//     goes through Cleanup;
//  4. suspension: the reconcile ends there (Finish then drops Reconciling: nothing is tried);
//  5. a new generation: Reconciling=True and Ready=Unknown, reason Progressing, written at once,
//     since kstatus readers wait on it and the steps may take up to their timeout. Once: the
//     retries of a failed attempt keep ProgressingWithRetry and Ready's failure (Ready does not
//     flap between False and Unknown at each retry).
//
// done means the reconcile ends with err.
func (r *Reconcile) Preamble(p Preamble) (done bool, err error) {
	obj := r.obj
	if !obj.GetDeletionTimestamp().IsZero() {
		if p.Finalizer == "" || !controllerutil.ContainsFinalizer(obj, p.Finalizer) {
			return true, nil
		}
		if p.Cleanup != nil {
			if err := p.Cleanup(); err != nil {
				return true, err
			}
		}
		controllerutil.RemoveFinalizer(obj, p.Finalizer)
		return true, nil
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok && r.fields.LastHandledReconcileAt != nil {
		*r.fields.LastHandledReconcileAt = v
	}
	if p.Finalizer != "" {
		controllerutil.AddFinalizer(obj, p.Finalizer)
	}
	if p.Suspended {
		log.FromContext(r.ctx).Info(p.SuspendedMessage)
		return true, nil
	}
	if obj.GetGeneration() != *r.fields.ObservedGeneration && !retrying(obj) {
		if err := r.progressing(); err != nil {
			return true, err
		}
	}
	return false, nil
}

// retrying: an attempt at the object's generation failed and is being retried (Finalize left
// Reconciling=True, ProgressingWithRetry): the new generation was announced already.
func retrying(obj Object) bool {
	c := conditions.Get(obj, meta.ReconcilingCondition)
	return c != nil && c.Reason == meta.ProgressingWithRetryReason && c.ObservedGeneration == obj.GetGeneration()
}
