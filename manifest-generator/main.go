// Command manifest-generator generates the manifests of Git and OCI sources with the
// .flux.yaml generators (or reads them raw), applies them, and writes requested image and policy
// updates back to Git.
package main

import (
	"context"
	"net/http"
	"os"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/impersonation"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/build"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/controller"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/sessionpod"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/update"
)

const controllerName = controller.ControllerName

// main reads best whole, as one list: the flags, then the manager and each thing it runs, in
// the order they start.
func main() {
	if runner.IsInvocation(os.Args) {
		os.Exit(runner.Main(os.Args[2:]))
	}
	var (
		opts             bootstrap.Options
		buildOpts        build.Options
		applyOpts        bootstrap.ApplyOptions
		runnerSocket     string
		runnerUID        int
		localRunnerUsers string
		scanConfig       imagescan.Config
		sessionPods      = sessionpod.DefaultOptions()
		serviceCIDRs     []string
		allowedCIDRs     []string
		sessionEgress    bool
	)
	opts.BindFlags(pflag.CommandLine, true)
	pflag.StringVar(&buildOpts.StoragePath, "storage-path", "/data", "The directory of the source checkouts.")
	pflag.IntVar(&buildOpts.CacheSize, "generator-cache-size", 64,
		"The number of generator outputs kept in memory: an unchanged revision is applied again without running any command. 0 turns the cache off.")
	pflag.Int64Var(&buildOpts.MaxOutput, "max-output-size", 64<<20, "The largest standard output, in bytes, a generator may print.")
	pflag.DurationVar(&buildOpts.DefaultTimeout, "sync-timeout", generatorv1.DefaultTimeout,
		"The timeout of a sync, and of each generator and updater command, when the ManifestGeneration's spec.timeout is not set.")
	pflag.StringVar(&buildOpts.Path, "generator-path", os.Getenv("PATH"), "The PATH generator and updater commands run with (kustomize, helm, sh).")
	applyOpts.BindFlags(pflag.CommandLine, "ManifestGeneration")
	pflag.StringVar(&runnerSocket, "runner-socket", "",
		"The Unix socket of the runner that runs generator and updater commands (the runner container of the Pod). "+
			"When empty, a local runner process is started: its sessions run as --local-runner-users when the controller is root, else as the controller's own user, which is for development only.")
	pflag.IntVar(&runnerUID, "runner-uid", 0,
		"The user id the runner of --runner-socket runs as (root, to switch to each session's user): a socket served by any other user is refused before anything is sent.")
	pflag.StringVar(&localRunnerUsers, "local-runner-users", "",
		"The user ids, FIRST-LAST, of the local runner's sessions (one each) when the controller is root and --runner-socket is empty; "+
			"empty for a block of 100 drawn at random from 1000000-2099999999, so that local runners on one machine share no user.")
	pflag.IntVar(&buildOpts.Limits.MaxGenerators, "max-generators", fluxyaml.DefaultMaxGenerators, "The number of generators a .flux.yaml may list; 0 is no limit.")
	pflag.Int64Var(&buildOpts.Limits.MaxOutput, "max-generation-output-size", fluxyaml.DefaultMaxGenerationOutput,
		"The total standard output, in bytes, of the generators of one ManifestGeneration; 0 is no limit.")
	pflag.IntVar(&buildOpts.Limits.MaxObjects, "max-objects", fluxyaml.DefaultMaxObjects, "The number of objects one ManifestGeneration may produce; 0 is no limit.")
	pflag.Int64Var(&buildOpts.Limits.MaxOutputNodes, "max-output-nodes", fluxyaml.DefaultMaxOutputNodes,
		"The YAML nodes (mappings, sequences and scalars) of the objects one ManifestGeneration may produce, what they take in memory once decoded; 0 is no limit.")
	pflag.Int64Var(&buildOpts.CacheMaxSize, "generator-cache-max-size", build.DefaultCacheMaxSize,
		"The memory, in bytes, the generator outputs kept in memory may take together (estimated from their objects): the least recently used are evicted, and a larger output is not kept.")
	pflag.DurationVar(&scanConfig.Interval, "registry-poll-interval", imagescan.DefaultInterval,
		"How long the tag list of an image repository is used by the automated releases before it is listed again; "+
			"a repository is listed once per interval whatever the number of workloads and ManifestGenerations that use it.")
	pflag.IntVar(&scanConfig.MaxConcurrent, "registry-concurrency", imagescan.DefaultMaxConcurrent,
		"The number of registry requests of the automated releases in flight at once, over all registries.")
	pflag.StringSliceVar(&serviceCIDRs, imagescan.ServiceCIDRFlag, nil,
		"The cluster's Service ranges (CIDRs, repeatable or comma-separated), where the registries of the automated releases may not be; empty when unknown.")
	pflag.StringSliceVar(&allowedCIDRs, imagescan.AllowedCIDRsFlag, nil,
		"Ranges (CIDRs or addresses, repeatable or comma-separated) the registries of the automated releases may be at although they are loopback, link-local, unspecified or in --service-cidr, e.g. 10.96.12.0/24 for an in-cluster registry; 0.0.0.0/0,::/0 allows every address.")
	sessionPods.BindFlags(pflag.CommandLine)
	pflag.BoolVar(&sessionEgress, "session-egress", true,
		"Whether a ManifestGeneration may let its commands reach the network (spec.egress); the commands of the others may open no socket but a Unix one. false refuses spec.egress.")
	pflag.Parse()
	serviceRanges, err := imagescan.ParseCIDRs(serviceCIDRs)
	bootstrap.Exit(err, "--"+imagescan.ServiceCIDRFlag)
	allowedRanges, err := imagescan.ParseCIDRs(allowedCIDRs)
	bootstrap.Exit(err, "--"+imagescan.AllowedCIDRsFlag)
	scanConfig.Addresses = imagescan.AddressPolicy{ServiceCIDRs: serviceRanges, Allowed: allowedRanges}
	buildOpts.Limits.Names = fluxyaml.LimitNames{Generators: "--max-generators", Output: "--max-generation-output-size", Objects: "--max-objects",
		Nodes: "--max-output-nodes"}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(generatorv1.AddToScheme(scheme))

	mgr, err := opts.NewManager(controllerName, scheme, &generatorv1.ManifestGeneration{}, &generatorv1.ManifestUpdate{})
	bootstrap.Exit(err, "creating manager")
	recorder, err := opts.NewEventRecorder(mgr, controllerName)
	bootstrap.Exit(err, "creating event recorder")
	readiness := conditiongauge.New(mgr.GetScheme(), generatorv1.Finalizer).MustRegister(ctrlmetrics.Registry)
	runnerClient := &runner.Client{Socket: runnerSocket, RunnerUID: runnerUID}
	switch {
	case sessionPods.Enabled:
		dialer, err := sessionpod.New(context.Background(), mgr.GetConfig(), sessionPods,
			os.Getenv("POD_NAME"), os.Getenv(bootstrap.RuntimeNamespaceEnv), "manager")
		bootstrap.Exit(err, "setting up the session pods")
		runnerClient = &runner.Client{Dialer: dialer}
		if opts.Shards != nil {
			dialer.Members = opts.Shards.Members
		}
		bootstrap.Exit(mgr.Add(manager.RunnableFunc(dialer.Sweep)), "setting up the session pods' sweep")
	case runnerSocket == "":
		var users runner.Users
		if localRunnerUsers != "" {
			users, err = runner.ParseUsers(localRunnerUsers)
			bootstrap.Exit(err, "--local-runner-users")
		}
		local, err := runner.StartLocal(runner.LocalOptions{Users: users})
		bootstrap.Exit(err, "starting the local runner")
		defer local.Stop()
		runnerClient = &local.Client
	}
	runnerClient.AllowEgress = sessionEgress
	buildOpts.Runner = runnerClient
	builder, err := build.New(buildOpts)
	bootstrap.Exit(err, "setting up the generator storage")

	generation := &controller.ManifestGenerationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: recorder, Builder: builder, Shards: opts.Shards,
		Clients: &impersonation.Clients{
			Config: mgr.GetConfig(), Scheme: scheme, Mapper: mgr.GetRESTMapper(),
			DefaultServiceAccount: opts.DefaultServiceAccount, ControllerNamespace: os.Getenv(bootstrap.RuntimeNamespaceEnv),
		},
		RequeueDependency: opts.RequeueDependency, ApplyConcurrency: applyOpts.Concurrency, DefaultMaxPrune: applyOpts.MaxPrune, Metrics: readiness,
		Scanner: imagescan.New(scanConfig),
	}
	bootstrap.Exit(generation.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the ManifestGeneration controller")
	updates := &controller.ManifestUpdateReconciler{
		Client: mgr.GetClient(), EventRecorder: recorder, Metrics: readiness, Shards: opts.Shards,
		Updater: &update.Updater{Secrets: mgr.GetClient(),
			// The builder's scheme: patch files merge the same way when synced and when updated.
			Scheme: clientgoscheme.Scheme, Path: buildOpts.Path, MaxOutput: buildOpts.MaxOutput,
			Runner: runnerClient, Limits: buildOpts.Limits},
		DefaultTimeout: buildOpts.DefaultTimeout, RequeueDependency: opts.RequeueDependency,
		ForgeClient: &http.Client{Timeout: controller.ForgeTimeout, Transport: scanConfig.Addresses.Transport()},
	}
	bootstrap.Exit(updates.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the ManifestUpdate controller")

	bootstrap.Run(mgr, controllerName)
}
