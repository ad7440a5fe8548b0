package gatereceiver

import (
	"context"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// annotationKeys are the request annotations of one action, as `kubectl gate` writes them.
type annotationKeys struct{ requestedAt, requestedBy, reason, duration string }

var keysOf = map[gatingv1.GateState]annotationKeys{
	gatingv1.GateOpened: {gatesapi.OpenRequestAnnotation, gatingv1.OpenRequestedByAnnotation,
		gatingv1.OpenReasonAnnotation, gatingv1.OpenDurationAnnotation},
	gatingv1.GateClosed: {gatesapi.CloseRequestAnnotation, gatingv1.CloseRequestedByAnnotation,
		gatingv1.CloseReasonAnnotation, gatingv1.CloseDurationAnnotation},
}

// receiverReason is the reason recorded in the gate's history: requestedBy is the controller's
// own account (the admission policy wants the writer's name), so the reason says that the
// receiver made the request and with which Secret's token.
func receiverReason(secretName, reason string) string {
	if reason == "" {
		return "receiver/" + secretName
	}
	return "receiver/" + secretName + ": " + reason
}

// writeRequest merge-patches the request annotations of the gate, all in one patch as
// `kubectl gate` does: a null removes a duration left over from an earlier request. The time has
// nanoseconds so that two requests within the same second are two requests for the controller.
func writeRequest(ctx context.Context, c client.Client, gate types.NamespacedName, state gatingv1.GateState,
	now time.Time, by, reason, duration string) error {
	keys := keysOf[state]
	at := now.UTC().Format(time.RFC3339Nano)
	annotations := map[string]*string{
		keys.requestedAt: &at,
		keys.requestedBy: &by,
		keys.reason:      &reason,
		keys.duration:    nil,
	}
	if duration != "" {
		annotations[keys.duration] = &duration
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	obj := &gatingv1.Gate{}
	obj.Namespace, obj.Name = gate.Namespace, gate.Name
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}
