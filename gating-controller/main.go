// Command gating-controller keeps Gate objects opened or closed: defaults, manual requests with a
// window, and the schedules of GateKeepers; it also serves Flux's Receiver API when asked
// (--webhook-receiver-addr).
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/impersonation"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/controller"
	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxalerts"
	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxreceiver"
	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxsyncs"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatereceiver"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

const controllerName = controller.ControllerName

// main reads best whole, as one list: the flags, then the manager and each thing it runs, in
// the order they start.
func main() {
	var opts bootstrap.Options
	opts.BindFlags(pflag.CommandLine, false)
	var receiverAddr string
	pflag.StringVar(&receiverAddr, "receiver-addr", "",
		"Address the webhook receiver that opens and closes gates listens on (e.g. :9292); empty, it is off.")
	var receiverMaxDuration time.Duration
	pflag.DurationVar(&receiverMaxDuration, "receiver-max-duration", gatereceiver.DefaultMaxDuration,
		"The longest a request made through the webhook receiver may last (its \"for\"); a longer one is refused with 400.")
	var webhookReceiverAddr string
	pflag.StringVar(&webhookReceiverAddr, "webhook-receiver-addr", "",
		"Address the receiver of Flux's Receiver API (notification.toolkit.fluxcd.io/v1) listens on (e.g. :9293); "+
			"empty, it is off and Receivers are not reconciled.")
	var webhookReceiverMaxBody int64
	pflag.Int64Var(&webhookReceiverMaxBody, "webhook-receiver-max-body-size", fluxreceiver.DefaultMaxBodySize,
		"The largest body, in bytes, a Receiver's webhook accepts; a larger one is refused with 413.")
	var webhookReceiverCrossNamespace, eventReceiverCrossNamespace bool
	var eventReceiverAddr string
	pflag.StringVar(&eventReceiverAddr, "event-receiver-addr", "",
		"The address the receiver of events binds to: controllers post their events to it in Flux's event format (their --events-addr), "+
			"and Flux's Alerts send them to their Providers (notification.toolkit.fluxcd.io/v1beta3). Empty: not served.")
	pflag.BoolVar(&eventReceiverCrossNamespace, "event-receiver-allow-cross-namespace-refs", false,
		"Let an Alert select the objects of other namespaces (eventSources[].namespace). Off: an Alert sends the events of its own namespace only.")
	pflag.BoolVar(&webhookReceiverCrossNamespace, "webhook-receiver-allow-cross-namespace-refs", false,
		"Let a Receiver ask objects of other namespaces than its own to reconcile; off, such a Receiver is Stalled.")
	var holdFluxSyncs bool
	pflag.BoolVar(&holdFluxSyncs, "hold-flux-syncs", true,
		"Hold Flux's Kustomizations, HelmReleases and ImageUpdateAutomations annotated with "+gatesapi.GatesAnnotation+
			" behind their gates (needs get/list/watch/patch on them, see deploy/README.md).")
	var dashboardURL string
	pflag.StringVar(&dashboardURL, "dashboard-url", "",
		"Base URL of the dashboard (kubectl gate ui) as deployed; GateNotifications link each event to it. Empty, they carry no link.")
	var notificationAllowedCIDRs, serviceCIDRs []string
	pflag.StringSliceVar(&notificationAllowedCIDRs, notify.AllowedCIDRsFlag, nil,
		"Ranges (CIDRs or addresses, repeatable or comma-separated) GateNotifications may post to although they are loopback, link-local, unspecified or in --service-cidr; 0.0.0.0/0,::/0 allows every address.")
	pflag.StringSliceVar(&serviceCIDRs, notify.ServiceCIDRFlag, nil,
		"The cluster's Service ranges (CIDRs), which GateNotifications may not post to unless --"+notify.AllowedCIDRsFlag+" allows them.")
	pflag.Parse()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gatingv1.AddToScheme(scheme))
	utilruntime.Must(notificationv1.AddToScheme(scheme))
	utilruntime.Must(notificationv1beta3.AddToScheme(scheme))

	owned := []client.Object{&gatingv1.Gate{}, &gatingv1.GateKeeper{}, &gatingv1.GateNotification{}}
	if webhookReceiverAddr != "" {
		owned = append(owned, &notificationv1.Receiver{})
	}
	mgr, err := opts.NewManager(controllerName, scheme, owned...)
	bootstrap.Exit(err, "creating manager")
	if receiverMaxDuration <= 0 {
		bootstrap.Exit(fmt.Errorf("--receiver-max-duration must be longer than 0s, not %s", receiverMaxDuration), "parsing flags")
	}
	if webhookReceiverMaxBody <= 0 {
		bootstrap.Exit(fmt.Errorf("--webhook-receiver-max-body-size must be more than 0, not %d", webhookReceiverMaxBody), "parsing flags")
	}
	recorder, err := opts.NewEventRecorder(mgr, controllerName)
	bootstrap.Exit(err, "creating event recorder")

	readiness := conditiongauge.New(mgr.GetScheme()).MustRegister(ctrlmetrics.Registry)
	calendarArtifacts := keeper.NewCalendarFetcher()
	gateReconciler := &controller.GateReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Shards: opts.Shards, Clock: clock.RealClock{}, Metrics: readiness,
		Artifacts: calendarArtifacts,
		// spec.serviceAccountName of a gate with promotion or checks.
		Clients: &impersonation.Clients{Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}}
	bootstrap.Exit(gateReconciler.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the Gate controller")
	keeperReconciler := &controller.GateKeeperReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Shards: opts.Shards, Clock: clock.RealClock{},
		Metrics: readiness, Artifacts: calendarArtifacts}
	bootstrap.Exit(keeperReconciler.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the GateKeeper controller")
	allowedRanges, err := notify.ParseCIDRs(notificationAllowedCIDRs)
	bootstrap.Exit(err, "parsing --"+notify.AllowedCIDRsFlag)
	serviceRanges, err := notify.ParseCIDRs(serviceCIDRs)
	bootstrap.Exit(err, "parsing --"+notify.ServiceCIDRFlag)
	notifications := &controller.GateNotificationReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Shards: opts.Shards,
		Metrics: readiness, DashboardURL: dashboardURL, RequeueDependency: opts.RequeueDependency,
		Sender: &notify.Sender{Policy: &notify.AddressPolicy{Allowed: allowedRanges, ServiceCIDRs: serviceRanges}}}
	bootstrap.Exit(notifications.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the GateNotification controller")
	gateReconciler.Notifier = notifications

	if holdFluxSyncs {
		starter := &fluxsyncs.Starter{Manager: mgr, Options: opts.ControllerOptions(), New: func(k fluxsyncs.Kind) *fluxsyncs.Reconciler {
			return &fluxsyncs.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: recorder, Shards: opts.Shards, Clock: clock.RealClock{}, Kind: k}
		}}
		bootstrap.Exit(starter.SetupWithManager(mgr), "setting up the holding of Flux's syncs")
	}

	if receiverAddr != "" {
		// Requests are written in the controller's own name, the one the admission policy expects.
		by, err := gatereceiver.WhoAmI(context.Background(), mgr.GetConfig())
		bootstrap.Exit(err, "setting up the webhook receiver")
		// APIServer: approvals are made with the caller's own token, on the controller's host and CA only.
		srv := &gatereceiver.Server{Addr: receiverAddr, Client: mgr.GetClient(), EventRecorder: recorder, RequestedBy: by,
			APIServer: mgr.GetConfig(), Limits: gatereceiver.Limits{MaxDuration: receiverMaxDuration}, Claims: claims(mgr, "receiver")}
		bootstrap.Exit(mgr.Add(srv), "setting up the webhook receiver")
	}

	if eventReceiverAddr != "" {
		resolver := &fluxalerts.Resolver{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Sender: notifications.Sender, EventRecorder: recorder,
			AllowCrossNamespaceRefs: eventReceiverCrossNamespace}
		bootstrap.Exit(fluxalerts.Setup(mgr, eventReceiverAddr, resolver), "setting up the event receiver")
	}

	if webhookReceiverAddr != "" {
		receivers := &fluxreceiver.ReceiverReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Shards: opts.Shards, Metrics: readiness,
			AllowCrossNamespaceRefs: webhookReceiverCrossNamespace, RequeueDependency: opts.RequeueDependency}
		bootstrap.Exit(receivers.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the Receiver controller")
		srv := &fluxreceiver.Server{Addr: webhookReceiverAddr, Client: mgr.GetClient(), EventRecorder: recorder,
			AllowCrossNamespaceRefs: webhookReceiverCrossNamespace, Limits: fluxreceiver.Limits{MaxBody: webhookReceiverMaxBody},
			Claims: claims(mgr, "webhook-receiver")}
		bootstrap.Exit(mgr.Add(srv), "setting up the Receiver webhook server")
	}

	bootstrap.Run(mgr, controllerName)
}

// claims share a receiver's replay memory between the replicas, through Leases of the
// controller's namespace; without one (a process outside a cluster), each remembers its own.
func claims(mgr ctrl.Manager, kind string) *webhook.Claims {
	ns := os.Getenv(bootstrap.RuntimeNamespaceEnv)
	if ns == "" {
		return nil
	}
	c := &webhook.Claims{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: ns, Holder: os.Getenv("POD_NAME"), Kind: kind}
	bootstrap.Exit(mgr.Add(c), "setting up the "+kind+"'s claims")
	return c
}
