// Package bootstrap holds what every Sluice controller binary shares: the common flags (README.md,
// Flags; built from fluxcd/pkg/runtime option sets where they exist) and the
// controller-runtime manager they configure. Each main.go only adds its own flags and reconcilers.
package bootstrap

import (
	goflag "flag"
	"time"

	"github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/jitter"
	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/spf13/pflag"
	"k8s.io/utils/ptr"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/sluice-gitops/sluice/shared/sharding"
)

// Options are the flags every controller has.
type Options struct {
	MetricsAddr           string
	HealthAddr            string
	Concurrent            int
	RequeueDependency     time.Duration
	WatchAllNamespaces    bool
	WatchLabelSelector    string
	DefaultServiceAccount string
	// EnablePprof serves Go's profiles under /debug/pprof/ on the metrics address.
	EnablePprof bool
	// EventsAddr is where the controller posts its events in Flux's format (--events-addr).
	EventsAddr string
	// Sharding spreads the objects over the running replicas (--sharding); NewManager sets
	// Shards then, which the reconcilers consult.
	Sharding bool
	Shards   *sharding.Shards

	Logger         logger.Options
	LeaderElection leaderelection.Options
	Client         APIClientOptions
	RateLimiter    controller.RateLimiterOptions
	Jitter         jitter.IntervalOptions
}

// BindFlags registers the common flags on fs, plus the Go flags controller-runtime registers
// (--kubeconfig). impersonation adds --default-service-account for controllers that impersonate.
func (o *Options) BindFlags(fs *pflag.FlagSet, impersonation bool) {
	fs.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "The address the Prometheus metrics endpoint binds to.")
	fs.BoolVar(&o.EnablePprof, "enable-pprof", false,
		"Serve Go's profiles (net/http/pprof) under /debug/pprof/ on the metrics address. Off by default: whoever "+
			"reaches the metrics port would read the controller's command line, goroutines and allocations, and make it spend CPU on profiles.")
	fs.StringVar(&o.HealthAddr, "health-addr", ":9440", "The address the health endpoints (/healthz, /readyz) bind to.")
	fs.StringVar(&o.EventsAddr, "events-addr", "",
		"The URL the controller posts its events to, in Flux's event format, as Flux's controllers post them to the notification-controller. Empty: events go to the API server only.")
	fs.IntVar(&o.Concurrent, "concurrent", 4, "The number of concurrent reconciles per kind.")
	fs.DurationVar(&o.RequeueDependency, "requeue-dependency", 30*time.Second,
		"The interval at which an object waiting on a dependency is retried.")
	fs.BoolVar(&o.WatchAllNamespaces, "watch-all-namespaces", true,
		"Watch objects in all namespaces; when false, only in the namespace of the controller (RUNTIME_NAMESPACE).")
	fs.StringVar(&o.WatchLabelSelector, "watch-label-selector", "",
		"Watch only the objects of this controller's kinds that match this label selector.")

	if impersonation {
		fs.StringVar(&o.DefaultServiceAccount, "default-service-account", "",
			"The service account impersonated when an object does not name one.")
	}
	fs.BoolVar(&o.Sharding, "sharding", false,
		"Spread the objects over every running replica, each reconciling its share (Leases in RUNTIME_NAMESPACE, one per replica named by POD_NAME), "+
			"instead of one elected replica reconciling all; what needs one replica (the leader's pod label) still follows --enable-leader-election.")
	o.Logger.BindFlags(fs)
	o.LeaderElection.BindFlags(fs)
	fs.Float32Var(&o.Client.QPS, "kube-api-qps", DefaultKubeAPIQPS,
		"The largest rate of requests per second to the API server, for the controller and the accounts it impersonates. "+
			"High by default: the API server's priority and fairness shares its capacity among clients, and a low client limit "+
			"only makes a first apply of many objects slow (50 gave 1,000 objects in a minute).")
	fs.IntVar(&o.Client.Burst, "kube-api-burst", DefaultKubeAPIBurst,
		"The largest burst of requests to the API server above --kube-api-qps.")
	o.RateLimiter.BindFlags(fs)
	o.Jitter.BindFlags(fs)
	fs.AddGoFlagSet(goflag.CommandLine)
}

// APIClientOptions bound the controller's requests to the API server (--kube-api-qps,
// --kube-api-burst), and those of the accounts it impersonates.
type APIClientOptions struct {
	QPS   float32
	Burst int
}

// The defaults of --kube-api-qps and --kube-api-burst; see BindFlags.
const (
	DefaultKubeAPIQPS   = 1000
	DefaultKubeAPIBurst = 2000
)

// ControllerOptions are the controller-runtime options the flags configure for every reconciler:
// concurrency and the retry backoff (--min-retry-delay, --max-retry-delay).
func (o *Options) ControllerOptions() ctrlcontroller.Options {
	opts := ctrlcontroller.Options{
		MaxConcurrentReconciles: o.Concurrent,
		RateLimiter:             controller.GetRateLimiter(o.RateLimiter),
	}
	if o.Shards != nil {
		// Every replica runs the reconcilers; the shards say which objects are whose.
		opts.NeedLeaderElection = ptr.To(false)
	}
	return opts
}
