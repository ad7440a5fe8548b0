package bootstrap

import (
	"fmt"
	"os"

	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/fluxcd/pkg/runtime/pprof"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/sluice-gitops/sluice/shared/sharding"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// RuntimeNamespaceEnv names the namespace the controller runs in (set from the downward API).
const RuntimeNamespaceEnv = "RUNTIME_NAMESPACE"

// NewManager sets up logging and jitter from the options and returns a manager with metrics (and,
// with --enable-pprof, Go's profiles), health probes, leader election (ID derived from name), the watch scope and, for the kinds in
// owned, the label selector. The manager stops on SIGTERM/SIGINT when started with
// ctrl.SetupSignalHandler().
func (o *Options) NewManager(name string, scheme *runtime.Scheme, owned ...client.Object) (ctrl.Manager, error) {
	logger.SetLogger(logger.NewLogger(o.Logger))
	if err := o.Jitter.SetGlobalJitter(nil); err != nil {
		return nil, fmt.Errorf("--interval-jitter-percentage: %w", err)
	}

	// The cache keeps no managed fields: no reconciler reads them, and they are often the larger
	// part of a small object, so of the controller's memory per object.
	cacheOpts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if !o.WatchAllNamespaces {
		ns := os.Getenv(RuntimeNamespaceEnv)
		if ns == "" {
			return nil, fmt.Errorf("--watch-all-namespaces=false needs the %s environment variable", RuntimeNamespaceEnv)
		}
		cacheOpts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	if o.WatchLabelSelector != "" {
		sel, err := labels.Parse(o.WatchLabelSelector)
		if err != nil {
			return nil, fmt.Errorf("--watch-label-selector: %w", err)
		}
		cacheOpts.ByObject = map[client.Object]cache.ByObject{}
		for _, obj := range owned {
			cacheOpts.ByObject[obj] = cache.ByObject{Label: sel}
		}
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = o.Client.QPS, o.Client.Burst
	cfg.UserAgent = name

	metrics := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.EnablePprof {
		// Off by default: every namespace may scrape the metrics port (deploy/'s allow-scraping).
		metrics.ExtraHandlers = pprof.GetHandlers()
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: o.HealthAddr,
		LeaderElection:         o.LeaderElection.Enable,
		LeaderElectionID:       leaderelection.GenerateID(name, o.WatchLabelSelector),
		// In a cluster the lease goes in the pod's namespace; out of a cluster (make dev, e2e)
		// controller-runtime cannot find it without being told.
		LeaderElectionNamespace:       os.Getenv(RuntimeNamespaceEnv),
		LeaderElectionReleaseOnCancel: o.LeaderElection.ReleaseOnCancel,
		LeaseDuration:                 &o.LeaderElection.LeaseDuration,
		RenewDeadline:                 &o.LeaderElection.RenewDeadline,
		RetryPeriod:                   &o.LeaderElection.RetryPeriod,
		Cache:                         cacheOpts,
		Client:                        ClientOptions(),
		// controller-runtime v0.24.1's priority queue can deadlock when it shuts down (its
		// handleReadyItems sends to a worker that has stopped, holding the lock every worker's
		// Done needs: kubernetes-sigs/controller-runtime#3538, fixed after v0.24.1), and a
		// SIGTERM then waits out the whole graceful shutdown timeout. The rate-limited work
		// queue has no such race; nothing here sets priorities.
		Controller: config.Controller{UsePriorityQueue: ptr.To(false)},
	})
	if err != nil {
		return nil, err
	}
	if o.Sharding {
		// Leases are read from the API server: every replica must see the others' renewals.
		direct, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, err
		}
		o.Shards, err = sharding.New(direct, sharding.Options{Controller: name, Namespace: os.Getenv(RuntimeNamespaceEnv), Identity: os.Getenv("POD_NAME")})
		if err != nil {
			return nil, fmt.Errorf("--sharding: %w", err)
		}
		if err := mgr.Add(o.Shards); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// ClientOptions are the options of a manager's client: Secrets and ConfigMaps are read straight
// from the API, since caching every Secret and ConfigMap of a cluster costs memory and widens what
// a compromised controller could list. Reconcilers therefore read Secrets with the manager's
// client (shared/secrets.Data), and test suites build their managers with these options too.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}}
}

// Exit logs err and exits non-zero when err is set: the failure path of every main.go.
func Exit(err error, msg string) {
	if err != nil {
		ctrl.Log.WithName("setup").Error(err, msg)
		os.Exit(1)
	}
}

// Run starts the manager and blocks until SIGTERM or SIGINT, then shuts down gracefully (leader
// lease released, in-flight reconciles finished within the manager's grace period).
func Run(mgr ctrl.Manager, name string) {
	ctrl.Log.WithName("setup").Info("starting manager", "controller", name)
	Exit(mgr.Start(ctrl.SetupSignalHandler()), "running manager")
}
