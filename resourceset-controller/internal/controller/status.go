package controller

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/patch"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/status"
)

// ControllerName is the field manager, event source and metrics name of the controller.
const ControllerName = "resourceset-controller"

// ownedConditions are the conditions the reconcilers of this controller write.
var ownedConditions = []string{meta.ReadyCondition, meta.ReconcilingCondition, meta.StalledCondition, gates.BlockedCondition}

// finalizeStatus is status.Finalize with this controller's field owner and conditions.
func finalizeStatus(ctx context.Context, patcher *patch.SerialPatcher, obj status.Object, observedGeneration *int64,
	err error, metrics *runtimectrl.Metrics) error {
	return status.Finalize(ctx, patcher, obj, observedGeneration, err, metrics, ControllerName, ownedConditions)
}

// userMessage is an error's text without controller-runtime's "terminal error: " prefix.
func userMessage(err error) string { return status.UserMessage(err) }
