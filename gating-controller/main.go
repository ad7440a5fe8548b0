// Command gating-controller keeps Gate objects opened or closed: defaults, manual requests with a
// window, and the schedules of GateKeepers.
package main

import (
	"context"
	"fmt"
	"time"

	runtimectrl "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/events"
	"github.com/fluxcd/pkg/runtime/metrics"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/controller"
	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxsyncs"
	"github.com/sluice-gitops/sluice/gating-controller/internal/receiver"
)

const controllerName = controller.ControllerName

func main() {
	var opts bootstrap.Options
	opts.BindFlags(pflag.CommandLine, false)
	var receiverAddr string
	pflag.StringVar(&receiverAddr, "receiver-addr", "",
		"Address the webhook receiver that opens and closes gates listens on (e.g. :9292); empty, it is off.")
	var receiverMaxDuration time.Duration
	pflag.DurationVar(&receiverMaxDuration, "receiver-max-duration", receiver.DefaultMaxDuration,
		"The longest a request made through the webhook receiver may last (its \"for\"); a longer one is refused with 400.")
	var holdFluxSyncs bool
	pflag.BoolVar(&holdFluxSyncs, "hold-flux-syncs", true,
		"Hold Flux's Kustomizations, HelmReleases and ImageUpdateAutomations annotated with "+gatesapi.GatesAnnotation+
			" behind their gates (needs get/list/watch/patch on them, see deploy/README.md).")
	pflag.Parse()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gatingv1.AddToScheme(scheme))

	mgr, err := opts.NewManager(controllerName, scheme, &gatingv1.Gate{}, &gatingv1.GateKeeper{})
	bootstrap.Exit(err, "creating manager")
	if receiverMaxDuration <= 0 {
		bootstrap.Exit(fmt.Errorf("--receiver-max-duration must be longer than 0s, not %s", receiverMaxDuration), "parsing flags")
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", controllerName)
	bootstrap.Exit(err, "creating event recorder")

	readiness := runtimectrl.NewMetrics(mgr, metrics.MustMakeRecorder())
	gateReconciler := &controller.GateReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clock.RealClock{}, Metrics: &readiness}
	bootstrap.Exit(gateReconciler.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the Gate controller")
	keeperReconciler := &controller.GateKeeperReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clock.RealClock{}}
	bootstrap.Exit(keeperReconciler.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the GateKeeper controller")

	if holdFluxSyncs {
		starter := &fluxsyncs.Starter{Manager: mgr, Options: opts.ControllerOptions(), New: func(k fluxsyncs.Kind) *fluxsyncs.Reconciler {
			return &fluxsyncs.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: recorder, Clock: clock.RealClock{}, Kind: k}
		}}
		bootstrap.Exit(starter.SetupWithManager(mgr), "setting up the holding of Flux's syncs")
	}

	if receiverAddr != "" {
		// Requests are written in the controller's own name, the one the admission policy expects.
		by, err := receiver.WhoAmI(context.Background(), mgr.GetConfig())
		bootstrap.Exit(err, "setting up the webhook receiver")
		srv := &receiver.Server{Addr: receiverAddr, Client: mgr.GetClient(), EventRecorder: recorder, RequestedBy: by,
			Limits: receiver.Limits{MaxDuration: receiverMaxDuration}}
		bootstrap.Exit(mgr.Add(srv), "setting up the webhook receiver")
	}

	bootstrap.Run(mgr, controllerName)
}
