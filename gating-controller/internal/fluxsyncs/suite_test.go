package fluxsyncs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	gatectrl "github.com/sluice-gitops/sluice/gating-controller/internal/controller"
)

// The Flux CRDs that `make tools` generates into bin/crds: Kustomization's from the
// kustomize-controller it builds, HelmRelease's and ImageUpdateAutomation's from their API
// modules.
var fluxCRDs = []string{
	"kustomize.toolkit.fluxcd.io_kustomizations.yaml",
	"helm.toolkit.fluxcd.io_helmreleases.yaml",
	"image.toolkit.fluxcd.io_imageupdateautomations.yaml",
}

// defaultConcurrent is the gating-controller's --concurrent default.
const defaultConcurrent = 4

var (
	env    *testenv.Env
	k8s    client.Client
	scheme = runtime.NewScheme()
	// lateNamespace is watched by a manager started before the Flux CRDs were installed: the
	// objects there are held only if it started holding the kinds when their CRDs appeared.
	lateNamespace string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = gatingv1.AddToScheme(scheme)
	var err error
	if env, err = testenv.Start(testenv.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8s = env.Client
	logs := io.Discard
	if os.Getenv("FLUXSYNCS_DEBUG") != "" {
		logs = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(false)))

	lateNamespace = "late-crds"
	if err := k8s.Create(context.Background(), namespaceObject(lateNamespace)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := startManager(ctx, lateNamespace); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var paths []string
	for _, f := range fluxCRDs {
		paths = append(paths, filepath.Join(env.Root, "bin", "crds", f))
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		fmt.Fprintf(os.Stderr, "installing Flux's CRDs (run `make tools`): %v\n", err)
		return 1
	}
	return m.Run()
}

// startManager runs the gating-controller's Gate reconciler and the holding of Flux's syncs,
// with a real clock, watching namespace only, so that each test has a controller of its own
// that it can stop. It returns when the manager is started.
func startManager(ctx context.Context, namespace string) (ctrl.Manager, error) {
	// The client limits of the deployed controller (shared/bootstrap's flag defaults).
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = bootstrap.DefaultKubeAPIQPS, bootstrap.DefaultKubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
	})
	if err != nil {
		return nil, err
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", FieldOwner)
	if err != nil {
		return nil, err
	}
	opts := controller.Options{MaxConcurrentReconciles: defaultConcurrent, SkipNameValidation: ptr(true)}
	gates := &gatectrl.GateReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clock.RealClock{}}
	if err := gates.SetupWithManager(ctx, mgr, opts); err != nil {
		return nil, err
	}
	starter := &Starter{Manager: mgr, Options: opts, New: func(k Kind) *Reconciler {
		return &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: recorder, Clock: clock.RealClock{}, Kind: k}
	}}
	if err := starter.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	go func() { _ = mgr.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("the manager's cache did not sync")
	}
	return mgr, nil
}

// controllerFor starts a manager for the test's namespace, stopped when the test ends.
func controllerFor(t *testing.T, namespace string) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := startManager(ctx, namespace); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return cancel
}

func ptr[T any](v T) *T { return &v }

func namespaceObject(name string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	return ns
}
