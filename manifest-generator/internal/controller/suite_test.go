package controller

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/build"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/update"
)

const timeout = 30 * time.Second

var (
	env  *testenv.Env
	k8s  client.Client
	logs = &testenv.LogBuffer{}
	// artifacts serves the source artifacts the tests publish, as the source-controller does.
	artifacts = &artifactServer{files: map[string][]byte{}}
	// storagePath is the builder's --storage-path.
	storagePath string
	// runnerClient reaches the runner process the tests start, which runs every command.
	runnerClient *runner.Client
	// testRunnerLimits are the runner's limits per session, small enough for a test to go over.
	testRunnerLimits = func() runner.Limits {
		l := runner.DefaultLimits
		l.MaxDisk, l.MaxProcesses, l.MaxChangedFiles = 32<<20, 128, 16
		return l
	}()
	// testLimits are the controller's limits per generation, small enough for a test to go over.
	testLimits = fluxyaml.Limits{MaxGenerators: 5, MaxOutput: 4 << 20, MaxObjects: 2000,
		Names: fluxyaml.LimitNames{Generators: "--max-generators", Output: "--max-generation-output-size", Objects: "--max-objects"}}
)

func TestMain(m *testing.M) {
	// The test binary is also the runner: StartLocal re-executes it with `runner`.
	if runner.IsInvocation(os.Args) {
		os.Exit(runner.Main(os.Args[2:]))
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	_ = generatorv1.AddToScheme(scheme)
	var err error
	if env, err = testenv.Start(testenv.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(false)))
	artifacts.Server = httptest.NewServer(artifacts)
	storage, err := os.MkdirTemp("", "manifest-generator-*")
	storagePath = storage
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	local, err := runner.StartLocal(runner.LocalOptions{Limits: testRunnerLimits})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerClient = &local.Client
	ctx, cancel := context.WithCancel(context.Background())
	if err := startManager(ctx, scheme, storage); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	local.Stop()
	artifacts.Close()
	_ = env.Stop()
	_ = os.RemoveAll(storage)
	os.Exit(code)
}

func startManager(ctx context.Context, scheme *runtime.Scheme, storage string) error {
	// The client reads Secrets uncached, as the controller's manager does.
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: bootstrap.ClientOptions()})
	if err != nil {
		return err
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", ControllerName)
	if err != nil {
		return err
	}
	readiness := conditiongauge.New(mgr.GetScheme(), generatorv1.Finalizer).MustRegister(ctrlmetrics.Registry)
	// Commands find kustomize and helm in bin/ (make tools), sh in /bin.
	builder, err := build.New(build.Options{StoragePath: storage, CacheSize: 16, Runner: runnerClient, Limits: testLimits,
		Path: filepath.Join(env.Root, "bin") + ":/usr/local/bin:/usr/bin:/bin"})
	if err != nil {
		return err
	}
	applyConfig := *mgr.GetConfig()
	applyConfig.QPS, applyConfig.Burst = bootstrap.DefaultKubeAPIQPS, bootstrap.DefaultKubeAPIBurst
	r := &ManifestGenerationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: recorder, Builder: builder,
		Clients: &impersonation.Clients{Config: &applyConfig, Scheme: scheme, Mapper: mgr.GetRESTMapper(),
			DefaultServiceAccount: "tenant", ControllerNamespace: "sluice-system"},
		RequeueDependency: time.Second, ApplyConcurrency: apply.DefaultConcurrency, Metrics: readiness,
		// Tag lists are kept a second: the automation tests push tags and expect them seen. Their
		// registries are on loopback, which the automation reaches only when allowed
		// (--external-service-allowed-cidrs=127.0.0.0/8).
		Scanner: imagescan.New(imagescan.Config{Interval: time.Second, Addresses: testAddresses}),
	}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return err
	}
	updates := &ManifestUpdateReconciler{
		Client: mgr.GetClient(), EventRecorder: recorder, Metrics: readiness, RequeueDependency: time.Second,
		Updater: &update.Updater{Secrets: mgr.GetClient(), Scheme: clientgoscheme.Scheme,
			Path: filepath.Join(env.Root, "bin") + ":/usr/local/bin:/usr/bin:/bin", Runner: runnerClient, Limits: testLimits},
		// The tests' Gitea listens on loopback.
		ForgeClient: &http.Client{Timeout: ForgeTimeout, Transport: testAddresses.Transport()},
	}
	if err := updates.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// tenantNamespace creates a namespace of the test's own (testenv) whose ServiceAccount "tenant"
// (the suite's --default-service-account) is bound to cluster-admin.
// testAddresses let the controllers reach the tests' servers, on loopback.
var testAddresses = imagescan.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

func tenantNamespace(t testing.TB) string {
	t.Helper()
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}})).To(Succeed())
	g.Expect(k8s.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-tenant"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
	})).To(Succeed())
	return ns
}

// artifactServer serves tar.gz artifacts over HTTP, as the source-controller's storage does.
type artifactServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

func (s *artifactServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// publish makes files the new artifact of the GitRepository ns/name at revision (creating the
// GitRepository the first time), as the source-controller would after a new commit.
func publish(t testing.TB, ns, name, revision string, files map[string]string) {
	t.Helper()
	publishSource(t, generatorv1.GitRepositoryKind, ns, name, revision, files)
}

// publishSource is publish for a source of any kind (GitRepository, OCIRepository).
func publishSource(t testing.TB, kind, ns, name, revision string, files map[string]string) {
	t.Helper()
	g := NewWithT(t)
	data := tarGzip(t, files)
	path := fmt.Sprintf("/%s/%s/%s/%x.tar.gz", strings.ToLower(kind), ns, name, sha256.Sum256(data))
	artifacts.mu.Lock()
	artifacts.files[path] = data
	artifacts.mu.Unlock()

	repo := newSource(kind)
	repo.SetNamespace(ns)
	repo.SetName(name)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(repo), repo); err != nil {
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		url := "https://example.com/repo.git"
		if kind == generatorv1.OCIRepositoryKind {
			url = "oci://example.com/repo"
		}
		g.Expect(unstructured.SetNestedField(repo.Object, map[string]any{"url": url, "interval": "1h"}, "spec")).To(Succeed())
		g.Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	}
	g.Expect(unstructured.SetNestedField(repo.Object, map[string]any{
		"path": path[1:], "url": artifacts.URL + path, "revision": revision,
		"digest": fmt.Sprintf("sha256:%x", sha256.Sum256(data)), "lastUpdateTime": time.Now().UTC().Format(time.RFC3339),
		// Like the source-controller's, the artifact has non-string fields too.
		"size": int64(len(data)), "metadata": map[string]any{"org.opencontainers.image.source": "https://example.com/repo.git"},
	}, "status", "artifact")).To(Succeed())
	g.Expect(k8s.Status().Update(context.Background(), repo)).To(Succeed())
}

// tarGzip archives files (slash paths to contents) like a source artifact.
func tarGzip(t testing.TB, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		mode := int64(0o644)
		if filepath.Ext(n) == ".sh" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func metaOf(key client.ObjectKey) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
}

// eventsOf lists the events of an object as "type reason: message".
func eventsOf(key client.ObjectKey) func(g Gomega) []string {
	return testenv.EventsOf(k8s, key, "")
}
