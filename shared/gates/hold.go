package gates

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// HeldObject is a gated object with conditions.
// +kubebuilder:object:generate=false
type HeldObject interface {
	gatesapi.Gated
	conditions.Setter
}

// Hold evaluates the gates of obj, logs them (`gates: {require, status}`, as the consumers' docs show), and
// says whether obj may go ahead. While they are closed obj carries Blocked=True, reason
// GateClosed, naming every closed gate and its next opening; an object that never applied
// anything (neverApplied) is also Ready=False with that reason. Blocked goes when they open.
func Hold(ctx context.Context, reader client.Reader, obj HeldObject, neverApplied bool) (bool, error) {
	spec := obj.GetGates()
	res, err := Evaluate(ctx, reader, obj.GetNamespace(), spec)
	if err != nil {
		return false, err
	}
	if spec != nil && len(spec.Refs) > 0 {
		log.FromContext(ctx).Info("evaluated gates", "gates", res.LogValue())
	}
	if res.Open {
		conditions.Delete(obj, gatesapi.BlockedCondition)
		return true, nil
	}
	conditions.MarkTrue(obj, gatesapi.BlockedCondition, gatesapi.GateClosedReason, "%s", res.Message())
	if neverApplied {
		conditions.MarkFalse(obj, meta.ReadyCondition, gatesapi.GateClosedReason, "%s", res.Message())
	}
	return false, nil
}
