package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/testenv"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/dependency"
)

// controllerNamespace is the namespace the controller runs in: the --default-service-account
// lockdown exempts it.
const (
	controllerNamespace = "sluice-system"
	timeout             = 30 * time.Second
)

var (
	env *testenv.Env
	k8s client.Client
	// clients is the reconcilers' per-account client cache.
	clients *impersonation.Clients
	// apiCalls counts the requests of the account clients.
	apiCalls = &requestCounter{}
	// logs holds what the reconcilers logged, as JSON lines.
	logs = &testenv.LogBuffer{}
)

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	_ = rsv1.AddToScheme(scheme)
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Flux's ExternalArtifact CRD, generated from its API module by `make tools`.
	externalArtifactCRD := filepath.Join(root, "bin", "crds", "source.toolkit.fluxcd.io_externalartifacts.yaml")
	env, err = testenv.Start(testenv.Options{Scheme: scheme, ExtraCRDPaths: []string{filepath.Join("testdata", "crds"), externalArtifactCRD}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(false)))
	ctx, cancel := context.WithCancel(context.Background())
	if err := startManager(ctx, scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

func startManager(ctx context.Context, scheme *runtime.Scheme) error {
	// The client reads Secrets uncached, as the controller's manager does.
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: bootstrap.ClientOptions()})
	if err != nil {
		return err
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}); err != nil {
		return err
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", ControllerName)
	if err != nil {
		return err
	}
	readiness := conditiongauge.New(mgr.GetScheme(), rsv1.Finalizer).MustRegister(ctrlmetrics.Registry)
	// The account clients count their API requests (the benchmarks report them) and have the
	// controller's default rate limits (--kube-api-qps, --kube-api-burst).
	applyConfig := rest.CopyConfig(mgr.GetConfig())
	applyConfig.QPS, applyConfig.Burst = bootstrap.DefaultKubeAPIQPS, bootstrap.DefaultKubeAPIBurst
	applyConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return apiCalls.wrap(rt) })
	clients = &impersonation.Clients{Config: applyConfig, Scheme: scheme, Mapper: mgr.GetRESTMapper(),
		DefaultServiceAccount: "tenant", ControllerNamespace: controllerNamespace}
	opts := controller.Options{MaxConcurrentReconciles: 4}
	rset := &ResourceSetReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: recorder, Clients: clients,
		// Far longer than any test waits: dependencies are released by watches, not by the poll.
		ControllerName: ControllerName, RequeueDependency: 10 * time.Minute, Dependencies: dependency.NewCache(),
		Metrics: readiness, ApplyConcurrency: apply.DefaultConcurrency,
	}
	if err := rset.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	provider := &ResourceSetInputProviderReconciler{
		Client: mgr.GetClient(), EventRecorder: recorder, Metrics: readiness,
		Addresses: testAddresses, Clients: clients,
	}
	if err := provider.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// testAddresses are --external-service-allowed-cidrs=127.0.0.1/32: the tests' inputs services
// listen on 127.0.0.1, which ExternalService providers are refused by default; the other
// loopback addresses stay refused, as every loopback address is by default.
var testAddresses = &inputs.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

// tenantNamespace creates a namespace of the test's own (testenv), with the ServiceAccount
// "tenant" bound to cluster-admin: the suite runs with --default-service-account=tenant, so
// ResourceSets outside controllerNamespace are applied through impersonation, as in a
// locked-down cluster. env.Namespace gives one without the account: its ResourceSets act as
// an account the test sets up itself.
func tenantNamespace(t testing.TB) string {
	t.Helper()
	ns := env.Namespace(t)
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}})).To(Succeed())
	g.Expect(k8s.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-tenant"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
	})).To(Succeed())
	return ns
}

// annotate merges annotations into an object, as `kubectl annotate --overwrite` does; an empty
// value removes the annotation.
func annotate(t testing.TB, obj client.Object, kv ...string) {
	t.Helper()
	testenv.Annotate(t, k8s, obj, kv...)
}

// poke asks for a reconcile now (reconcile.fluxcd.io/requestedAt), as `flux reconcile` does.
func poke(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Poke(t, k8s, obj)
}

// requestCounter counts HTTP requests by method.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[string]int{}
		}
		c.counts[req.Method]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// reset returns the counts so far and starts again.
func (c *requestCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
