// Command resourceset-controller renders ResourceSets (a matrix of inputs through templated
// resources) and applies the result with server-side apply.
package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/impersonation"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/controller"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/dependency"
)

const controllerName = controller.ControllerName

func main() {
	var (
		opts                       bootstrap.Options
		applyOpts                  bootstrap.ApplyOptions
		serviceCIDRs, allowedCIDRs []string
	)
	opts.BindFlags(pflag.CommandLine, true)
	// Unmet dependencies are checked again every five seconds (docs/resourceset.md).
	requeue := pflag.Lookup("requeue-dependency")
	requeue.DefValue = "5s"
	bootstrap.Exit(requeue.Value.Set("5s"), "default of --requeue-dependency")
	applyOpts.BindFlags(pflag.CommandLine, "ResourceSet")
	pflag.StringSliceVar(&serviceCIDRs, inputs.ServiceCIDRFlag, nil,
		"The cluster's Service ranges (CIDRs, repeatable or comma-separated), which ExternalService input providers may not reach; empty when unknown.")
	pflag.StringSliceVar(&allowedCIDRs, inputs.AllowedCIDRsFlag, nil,
		"Ranges (CIDRs or addresses, repeatable or comma-separated) ExternalService input providers may reach although they are loopback, link-local, unspecified or in --service-cidr, e.g. 10.96.12.0/24 for an in-cluster inputs service; 0.0.0.0/0,::/0 allows every address.")
	pflag.Parse()
	serviceRanges, err := inputs.ParseCIDRs(serviceCIDRs)
	bootstrap.Exit(err, "--"+inputs.ServiceCIDRFlag)
	allowedRanges, err := inputs.ParseCIDRs(allowedCIDRs)
	bootstrap.Exit(err, "--"+inputs.AllowedCIDRsFlag)
	addresses := &inputs.AddressPolicy{ServiceCIDRs: serviceRanges, Allowed: allowedRanges}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(rsv1.AddToScheme(scheme))

	mgr, err := opts.NewManager(controllerName, scheme, &rsv1.ResourceSet{}, &rsv1.ResourceSetInputProvider{})
	bootstrap.Exit(err, "creating manager")
	recorder, err := opts.NewEventRecorder(mgr, controllerName)
	bootstrap.Exit(err, "creating event recorder")
	readiness := conditiongauge.New(mgr.GetScheme(), rsv1.Finalizer).MustRegister(ctrlmetrics.Registry)

	clients := &impersonation.Clients{
		Config: mgr.GetConfig(), Scheme: scheme, Mapper: mgr.GetRESTMapper(),
		DefaultServiceAccount: opts.DefaultServiceAccount, ControllerNamespace: os.Getenv(bootstrap.RuntimeNamespaceEnv),
	}
	rset := &controller.ResourceSetReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: recorder, Clients: clients, Shards: opts.Shards,
		ControllerName: controllerName, RequeueDependency: opts.RequeueDependency, Dependencies: dependency.NewCache(),
		Metrics: readiness, ApplyConcurrency: applyOpts.Concurrency, DefaultMaxPrune: applyOpts.MaxPrune,
	}
	bootstrap.Exit(rset.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the ResourceSet controller")
	provider := &controller.ResourceSetInputProviderReconciler{
		Client: mgr.GetClient(), EventRecorder: recorder, Metrics: readiness,
		Addresses: addresses, Clients: clients, Shards: opts.Shards,
	}
	bootstrap.Exit(provider.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()),
		"setting up the ResourceSetInputProvider controller")

	bootstrap.Run(mgr, controllerName)
}
