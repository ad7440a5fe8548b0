// Command source-controller fetches Git repositories, Helm repositories and charts, OCI
// artifacts and S3-compatible buckets, and serves them as versioned, digest-verified artifacts
// over HTTP.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/sharding"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/controller"
	"github.com/sluice-gitops/sluice/source-controller/internal/git"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
	"github.com/sluice-gitops/sluice/source-controller/internal/leaderpod"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

const controllerName = controller.ControllerName

// main reads best whole, as one list: the flags, then the manager and each thing it runs, in
// the order they start.
func main() {
	var (
		opts        bootstrap.Options
		storageOpts storage.Options
		remoteFlags storage.RemoteFlags
		storageAddr string
		digestAlgo  string
		urlKeysFile string
		urlKeysRef  string
		leaderLabel string

		helmIndexMaxSize int64
		helmCache        struct {
			maxSize            int
			ttl, purgeInterval time.Duration
		}
		chartLimits         chart.Limits
		sharedDownloadsSize int64

		gitMaxCloneSize, ociMaxLayerSize int64
	)
	opts.BindFlags(pflag.CommandLine, false)
	pflag.StringVar(&storageOpts.BasePath, "storage-path", "/data", "The local directory where artifacts are stored.")
	pflag.StringVar(&storageAddr, "storage-addr", ":9090", "The address the artifact HTTP server binds to.")
	pflag.StringVar(&storageOpts.AdvAddr, "storage-adv-addr", defaultAdvAddr(),
		"The host[:port] artifact URLs are advertised with (in a cluster, the Service DNS name).")
	pflag.StringVar(&urlKeysFile, "artifact-url-keys-file", "",
		"A file of keys that sign artifact URLs, one per line, each of 32 bytes or more: the first signs, all verify, so keys rotate. Empty: a key generated into --storage-path.")
	pflag.StringVar(&urlKeysRef, "artifact-url-keys-secret-ref", "",
		"A Secret of the controller's namespace whose `keys` sign artifact URLs, in the format of --artifact-url-keys-file, created with a random key when missing: every replica reads it, so all sign alike and a failover changes no URL.")
	pflag.BoolVar(&storageOpts.OpenArtifacts, "insecure-open-artifacts", false,
		"Write unsigned artifact URLs and serve every artifact to whoever reaches the artifact server, as Flux's source-controller does. Off: a URL opens only the artifacts of its object.")
	pflag.DurationVar(&storageOpts.RetentionTTL, "artifact-retention-ttl", time.Minute,
		"How long older artifacts are kept before garbage collection.")
	pflag.IntVar(&storageOpts.RetentionRecords, "artifact-retention-records", 2,
		"How many artifacts per object are kept, the current one included.")
	pflag.StringVar(&leaderLabel, "leader-pod-label", "",
		"A label key set to \"leader\" on the pod of the elected replica, and removed from the others', so that a Service selecting it sends artifact downloads to the replica whose storage holds them. Needs POD_NAME and RUNTIME_NAMESPACE. Empty: no pod is labelled.")
	pflag.StringVar(&digestAlgo, "artifact-digest-algo", "sha256", "The digest algorithm of artifacts: sha256, sha384 or sha512.")
	pflag.Int64Var(&storageOpts.MaxSize, "artifact-max-size", storage.DefaultMaxSize,
		"The largest artifact, in bytes, that is stored; 0 means no limit. The default (256 MiB) keeps one source from filling the shared storage and is far above a repository of manifests.")
	pflag.Int64Var(&gitMaxCloneSize, "git-max-clone-size", git.DefaultMaxCloneSize,
		"The largest Git clone, in bytes, .git and working tree together; a bigger one stops before it fills the disk. 0 means no limit. The default (1 GiB) leaves room for repositories that spec.ignore cuts down to an artifact.")
	pflag.Int64Var(&ociMaxLayerSize, "oci-max-layer-size", controller.DefaultMaxLayerSize,
		"The largest OCI layer, in bytes, that is pulled: a bigger one is refused by its descriptor before the download. 0 means no limit. The default (256 MiB) is that of --artifact-max-size.")
	pflag.Int64Var(&helmIndexMaxSize, "helm-index-max-size", 50<<20, "The largest Helm repository index.yaml, in bytes, that is downloaded.")
	pflag.Int64Var(&chartLimits.MaxChartSize, "helm-chart-max-size", 10<<20, "The largest Helm chart archive, in bytes, that is downloaded.")
	pflag.Int64Var(&chartLimits.MaxFileSize, "helm-chart-file-max-size", 5<<20, "The largest file, in bytes, a Helm chart may hold.")
	pflag.Int64Var(&sharedDownloadsSize, "helm-chart-cache-max-size", 64<<20,
		"A size in bytes (not a count, unlike --helm-cache-max-size): the chart archives kept in memory, each downloaded once for all the HelmCharts that resolve to it (same URL, digest and credentials); 0 downloads a chart for each HelmChart.")
	pflag.IntVar(&helmCache.maxSize, "helm-cache-max-size", 0,
		"A count (not bytes, unlike --helm-chart-cache-max-size; Flux's flag): the number of Helm repository indexes kept in memory; 0 disables the cache. A full cache evicts the least recently used index.")
	pflag.DurationVar(&helmCache.ttl, "helm-cache-ttl", 15*time.Minute, "How long an index stays cached after its last use.")
	pflag.DurationVar(&helmCache.purgeInterval, "helm-cache-purge-interval", time.Minute, "How often expired indexes are removed from the cache.")
	remoteFlags.BindFlags(pflag.CommandLine)
	pflag.Parse()
	if os.Getenv("GOGC") == "" {
		// Artifacts are built from short-lived buffers: collecting at half the live heap's
		// growth, not all of it, costs about 9% more CPU for 15% less peak memory
		// (docs/storage.md, Memory).
		debug.SetGCPercent(50)
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(sourcev1.AddToScheme(scheme))

	storageOpts.DigestAlgorithm = digest.Algorithm(digestAlgo)
	if urlKeysFile != "" {
		if storageOpts.OpenArtifacts {
			bootstrap.Exit(errors.New("--insecure-open-artifacts takes no --artifact-url-keys-file"), "setting up the artifact storage")
		}
		keys, err := storage.ReadURLKeys(urlKeysFile)
		bootstrap.Exit(err, "reading --artifact-url-keys-file")
		storageOpts.URLKeys = keys
	}
	if gitMaxCloneSize < 0 || ociMaxLayerSize < 0 {
		bootstrap.Exit(errors.New("--git-max-clone-size and --oci-max-layer-size must not be negative"), "setting up the size limits")
	}

	mgr, err := opts.NewManager(controllerName, scheme, &sourcev1.GitRepository{}, &sourcev1.HelmRepository{}, &sourcev1.HelmChart{}, &sourcev1.OCIRepository{}, &sourcev1.Bucket{})
	bootstrap.Exit(err, "creating manager")
	if urlKeysRef != "" {
		if storageOpts.OpenArtifacts || urlKeysFile != "" {
			bootstrap.Exit(errors.New("--artifact-url-keys-secret-ref takes neither --insecure-open-artifacts nor --artifact-url-keys-file"), "setting up the artifact storage")
		}
		storageOpts.URLKeys, err = storage.URLKeysFromSecret(context.Background(), mgr.GetAPIReader(), mgr.GetClient(),
			os.Getenv(bootstrap.RuntimeNamespaceEnv), urlKeysRef)
		bootstrap.Exit(err, "reading --artifact-url-keys-secret-ref")
	}
	storageOpts.Remote, err = remoteFlags.Remote(context.Background(), mgr.GetAPIReader(), os.Getenv(bootstrap.RuntimeNamespaceEnv))
	bootstrap.Exit(err, "setting up the artifact store")
	store, err := storage.New(storageOpts)
	bootstrap.Exit(err, "setting up the artifact storage")
	recorder, err := opts.NewEventRecorder(mgr, controllerName)
	bootstrap.Exit(err, "creating event recorder")
	artifactServer := &storage.Server{Addr: storageAddr, Storage: store}
	bootstrap.Exit(mgr.Add(artifactServer), "adding the artifact server")
	bootstrap.Exit(mgr.AddReadyzCheck("artifact-server", artifactServer.Ready), "adding the artifact server readiness check")
	if opts.Shards != nil {
		// What moved to another replica leaves this one's disk after the retention TTL.
		controller.ReleaseMovedArtifacts(opts.Shards, store, storageOpts.RetentionTTL)
	}
	if leaderLabel != "" {
		labeler, err := leaderpod.New(mgr, leaderLabel)
		bootstrap.Exit(err, "setting up --leader-pod-label")
		bootstrap.Exit(labeler.SetupWithManager(mgr), "adding the leader pod labeler")
	}

	readiness := conditiongauge.New(mgr.GetScheme(), sourcev1.SourceFinalizer).MustRegister(ctrlmetrics.Registry)
	common := controller.SourceReconciler{
		Client: mgr.GetClient(), EventRecorder: recorder, Storage: store, ControllerName: sharding.FieldOwner(controllerName, opts.Shards), Metrics: readiness,
		Shards: opts.Shards,
	}
	gitRepo := &controller.GitRepositoryReconciler{SourceReconciler: common, MaxCloneSize: gitMaxCloneSize}
	bootstrap.Exit(gitRepo.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the GitRepository controller")
	helmRepo := &controller.HelmRepositoryReconciler{SourceReconciler: common, MaxIndexSize: helmIndexMaxSize}
	bootstrap.Exit(helmRepo.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the HelmRepository controller")
	ociRepo := &controller.OCIRepositoryReconciler{SourceReconciler: common, MaxLayerSize: ociMaxLayerSize}
	bootstrap.Exit(ociRepo.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the OCIRepository controller")
	bucketSource := &controller.BucketReconciler{SourceReconciler: common}
	bootstrap.Exit(bucketSource.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the Bucket controller")
	indexCache := index.NewCache(helmCache.maxSize, helmCache.ttl)
	if indexCache != nil {
		indexCache.Events = controller.RecordCacheEvent
		bootstrap.Exit(mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return indexCache.PurgeEvery(ctx, helmCache.purgeInterval)
		})), "adding the index cache purge")
	}
	helmChart := &controller.HelmChartReconciler{
		SourceReconciler: common, Limits: chartLimits, RequeueDependency: opts.RequeueDependency, Fetcher: &artifact.Fetcher{},
		IndexCache: indexCache, Downloads: chart.NewDownloads(sharedDownloadsSize),
	}
	bootstrap.Exit(helmChart.SetupWithManager(context.Background(), mgr, opts.ControllerOptions()), "setting up the HelmChart controller")

	bootstrap.Run(mgr, controllerName)
}

// defaultAdvAddr is the advertised address when the flag is not set: the environment, else the
// host name with the server port.
func defaultAdvAddr() string {
	if v := os.Getenv("SOURCE_CONTROLLER_STORAGE_ADV_ADDR"); v != "" {
		return v
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return fmt.Sprintf("%s:9090", host)
}
