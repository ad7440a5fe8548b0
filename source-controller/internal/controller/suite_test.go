package controller

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/events"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/testenv"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// maxArtifactSize is --artifact-max-size, helmIndexMaxSize --helm-index-max-size,
// gitMaxCloneSize --git-max-clone-size and ociMaxLayerSize --oci-max-layer-size for the suite:
// small, so a test can go over them. A clone and a layer can go over --artifact-max-size
// without going over their own limits.
const (
	maxArtifactSize  = 1 << 20
	helmIndexMaxSize = 1 << 20
	chartMaxSize     = 512 << 10
	gitMaxCloneSize  = 8 << 20
	ociMaxLayerSize  = 4 << 20
)

// directLabel marks the GitRepositories the suite's controller does not reconcile.
const directLabel = "test.sluice.dev/direct"

var (
	env   *testenv.Env
	k8s   client.Client
	store *storage.Storage
	// storageDir is --storage-path of the suite.
	storageDir string
	// indexCache is --helm-cache-max-size=10: every HelmChart test resolves through it.
	indexCache = func() *index.Cache {
		c := index.NewCache(10, time.Minute)
		c.Events = RecordCacheEvent
		return c
	}()
)

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = sourcev1.AddToScheme(scheme)
	var err error
	if env, err = testenv.Start(testenv.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	ctrl.SetLogger(zap.New(zap.WriteTo(logs)))
	code, err := run(m, scheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	_ = env.Stop()
	os.Exit(code)
}

func run(m *testing.M, scheme *runtime.Scheme) (int, error) {
	dir, err := os.MkdirTemp("", "storage-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	storageDir = dir
	// The artifact server the artifact URLs point to, as users and consumers reach it.
	server := httptest.NewUnstartedServer(nil)
	store, err = storage.New(storage.Options{
		BasePath: dir, AdvAddr: server.Listener.Addr().String(),
		RetentionTTL: 0, RetentionRecords: 2, MaxSize: maxArtifactSize,
	})
	if err != nil {
		return 0, err
	}
	server.Config.Handler = store.Handler()
	server.Start()
	defer server.Close()

	// The client reads Secrets uncached, as the controller's manager does.
	// GitRepositories labelled directLabel are left to the tests that call Reconcile themselves
	// (costs and benchmarks), so that no second reconciler fetches beside them.
	direct, err := labels.Parse("!" + directLabel)
	if err != nil {
		return 0, err
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: bootstrap.ClientOptions(),
		Cache:  cache.Options{ByObject: map[client.Object]cache.ByObject{&sourcev1.GitRepository{}: {Label: direct}}}})
	if err != nil {
		return 0, err
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", ControllerName)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	common := SourceReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Storage: store, ControllerName: ControllerName}
	r := &GitRepositoryReconciler{SourceReconciler: common, MaxCloneSize: gitMaxCloneSize}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return 0, err
	}
	helmRepo := &HelmRepositoryReconciler{SourceReconciler: common, MaxIndexSize: helmIndexMaxSize}
	if err := helmRepo.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return 0, err
	}
	ociRepo := &OCIRepositoryReconciler{SourceReconciler: common, MaxLayerSize: ociMaxLayerSize}
	if err := ociRepo.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return 0, err
	}
	helmChart := &HelmChartReconciler{
		SourceReconciler: common, RequeueDependency: time.Second, Fetcher: &artifact.Fetcher{},
		Limits: chart.Limits{MaxChartSize: chartMaxSize}, IndexCache: indexCache, Downloads: chart.NewDownloads(64 << 20),
	}
	if err := helmChart.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return 0, err
	}
	go func() { _ = mgr.Start(ctx) }()
	return m.Run(), nil
}

// logs holds what the reconciler logged, as JSON lines.
var logs = &testenv.LogBuffer{}

const timeout = 30 * time.Second

func getRepo(g Gomega, key client.ObjectKey) *sourcev1.GitRepository {
	obj := &sourcev1.GitRepository{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

// condition returns "status|reason|message" of a condition of the GitRepository, once the
// status reflects the current reconcile request (see observedCondition).
func condition(key client.ObjectKey, t string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getRepo(g, key)
		return observedCondition(obj, obj.Status.ObservedGeneration, t)
	}
}

// observedCondition is "status|reason|message" of a condition of a source, or "not observed
// yet" while its status does not reflect the current reconcile request (and, for Ready=True,
// the generation, written with the artifact).
func observedCondition(obj source, observedGeneration int64, t string) string {
	if obj.GetAnnotations()[meta.ReconcileRequestAnnotation] != obj.GetRequestStatus().LastHandledReconcileAt {
		return "not observed yet"
	}
	c := conditions.Get(obj, t)
	if c == nil {
		return ""
	}
	if t == meta.ReadyCondition && c.Status == metav1.ConditionTrue && observedGeneration != obj.GetGeneration() {
		return "not observed yet"
	}
	return string(c.Status) + "|" + c.Reason + "|" + c.Message
}

// revision returns the revision of the stored artifact.
func revision(key client.ObjectKey) func(g Gomega) string {
	return func(g Gomega) string {
		if a := getRepo(g, key).Status.Artifact; a != nil {
			return a.Revision
		}
		return ""
	}
}

// poke asks for a reconcile now, as `flux reconcile source git` does.
func poke(t *testing.T, key client.ObjectKey) {
	t.Helper()
	testenv.Poke(t, k8s, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
}

func createRepo(t *testing.T, ns, name string, spec sourcev1.GitRepositorySpec) client.ObjectKey {
	t.Helper()
	if spec.Interval.Duration == 0 {
		spec.Interval = metav1.Duration{Duration: time.Hour}
	}
	obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return client.ObjectKeyFromObject(obj)
}

func createSecret(t *testing.T, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	NewWithT(t).Expect(k8s.Create(context.Background(), s)).To(Succeed())
}

// fetchArtifact downloads the stored artifact from its URL like a consumer, verifies its digest
// and returns the extracted files.
func fetchArtifact(t *testing.T, key client.ObjectKey) map[string]string {
	t.Helper()
	g := NewWithT(t)
	return fetchArtifactOf(t, getRepo(g, key).Status.Artifact)
}

// fetchArtifactOf downloads an artifact like a consumer (digest verified) and returns its files.
func fetchArtifactOf(t *testing.T, a *meta.Artifact) map[string]string {
	t.Helper()
	g := NewWithT(t)
	g.Expect(a).NotTo(BeNil())
	dir := t.TempDir() + "/x"
	g.Expect((&artifact.Fetcher{}).Fetch(context.Background(), a.URL, a.Digest, dir)).To(Succeed())
	files := map[string]string{}
	g.Expect(walkFiles(dir, files)).To(Succeed())
	return files
}

func walkFiles(dir string, files map[string]string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
}

// eventsOf lists the events of an object as "type reason: message".
func eventsOf(key client.ObjectKey) func(g Gomega) []string {
	return testenv.EventsOf(k8s, key, "")
}
