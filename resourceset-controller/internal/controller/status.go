package controller

import (
	"context"

	runtimectrl "github.com/fluxcd/pkg/runtime/controller"

	"github.com/sluice-gitops/sluice/shared/status"
)

// ControllerName is the field manager, event source and metrics name of the controller.
const ControllerName = "resourceset-controller"

// finalizeStatus is status.Finalize with this controller's field owner.
func finalizeStatus(ctx context.Context, patcher *status.Patcher, obj status.Object, observedGeneration *int64,
	err error, metrics *runtimectrl.Metrics) error {
	return status.Finalize(ctx, patcher, obj, observedGeneration, err, metrics, ControllerName)
}

// userMessage is an error's text without controller-runtime's "terminal error: " prefix.
func userMessage(err error) string { return status.UserMessage(err) }
