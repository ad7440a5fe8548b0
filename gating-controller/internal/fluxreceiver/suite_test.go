package fluxreceiver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the signatures some senders make.
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/bootstrap"
	"github.com/sluice-gitops/sluice/shared/testenv"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// kustomizationCRD is Flux's Kustomization CRD, which `make tools` puts in bin/crds: a target of
// another kind than the sources.
const kustomizationCRD = "kustomize.toolkit.fluxcd.io_kustomizations.yaml"

var (
	env *testenv.Env
	k8s client.Client
	// serverURL is the receiver under test, served on a loopback port beside the real Receiver
	// controller, against the real API server.
	serverURL string
	// newServer makes another receiver, with other limits, on the manager's client.
	newServer func(Limits) *Server
	// served is the receivers' view of the Receivers: the manager's cache.
	served client.Reader
	// logs holds what the receiver and the controller logged.
	logs = &testenv.LogBuffer{}
)

var (
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
)

func TestMain(m *testing.M) {
	if fuzzingOnly() {
		os.Exit(m.Run())
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = notificationv1.AddToScheme(scheme)
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if env, err = testenv.Start(testenv.Options{Scheme: scheme,
		ExtraCRDPaths: []string{filepath.Join(root, "bin", "crds", kustomizationCRD)}}); err != nil {
		fmt.Fprintln(os.Stderr, err, "(run `make tools`)")
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

// fuzzingOnly tells whether this process only fuzzes (a fuzz worker, or `go test -run '^$' -fuzz`
// as `make fuzz` runs it): FuzzReceiverPayloads parses in memory, and each worker would otherwise
// start a control plane of its own.
func fuzzingOnly() bool {
	flag.Parse()
	if w := flag.Lookup("test.fuzzworker"); w != nil && w.Value.String() == "true" {
		return true
	}
	fuzz, run := flag.Lookup("test.fuzz"), flag.Lookup("test.run")
	return fuzz != nil && fuzz.Value.String() != "" && run != nil && run.Value.String() == "^$"
}

// startManager runs the Receiver controller and the receiver as main.go wires them, Secrets read
// uncached as bootstrap's manager reads them; a missing Secret is looked at again every second.
func startManager(ctx context.Context, scheme *runtime.Scheme) error {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Client:  bootstrap.ClientOptions(),
	})
	if err != nil {
		return err
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", FieldOwner)
	if err != nil {
		return err
	}
	receivers := &ReceiverReconciler{Client: mgr.GetClient(), EventRecorder: recorder, RequeueDependency: time.Second}
	if err := receivers.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 2}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	serverURL = "http://" + ln.Addr().String()
	served = mgr.GetClient()
	if err := mgr.Add(&Server{Listener: ln, Client: mgr.GetClient(), EventRecorder: recorder}); err != nil {
		return err
	}
	newServer = func(l Limits) *Server {
		return &Server{Client: mgr.GetClient(), EventRecorder: recorder, Limits: l}
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// startServer serves another receiver, with these limits, on a loopback port until the test
// ends, and returns its URL.
func startServer(t *testing.T, limits Limits) string {
	t.Helper()
	srv := newServer(limits)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv.Listener = ln
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Start(ctx) }()
	return "http://" + ln.Addr().String()
}

// newReceiver creates the Secret "<name>-token" holding token and a Receiver of the type with the
// resources, changed by edit when given, waits until it is Ready and returns its webhook path.
func newReceiver(t *testing.T, ns, name, typ, token string, resources []notificationv1.ReceiverResource,
	edit func(*notificationv1.Receiver)) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-token"},
		Data:       map[string][]byte{notificationv1.TokenKey: []byte(token)},
	})).To(Succeed())
	r := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: notificationv1.ReceiverSpec{
			Type:      typ,
			Resources: resources,
			SecretRef: &meta.LocalObjectReference{Name: name + "-token"},
		},
	}
	if edit != nil {
		edit(r)
	}
	g.Expect(k8s.Create(ctx, r)).To(Succeed())
	var path string
	g.Eventually(func(g Gomega) {
		got := getReceiver(g, ns, name)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), "%v", got.Status.Conditions)
		path = got.Status.WebhookPath
	}, 10*time.Second).Should(Succeed())
	// The receiver finds it in the manager's cache, which may see the Ready status a moment later.
	g.Eventually(func(g Gomega) {
		list := &notificationv1.ReceiverList{}
		g.Expect(served.List(ctx, list, client.MatchingFields{WebhookPathIndex: path})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
	}, 10*time.Second).Should(Succeed())
	return path
}

func getReceiver(g Gomega, ns, name string) *notificationv1.Receiver {
	r := &notificationv1.Receiver{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, r)).To(Succeed())
	return r
}

// resource is an entry of spec.resources.
func resource(kind, name string) notificationv1.ReceiverResource {
	return notificationv1.ReceiverResource{CrossNamespaceObjectReference: notificationv1.CrossNamespaceObjectReference{Kind: kind, Name: name}}
}

// newGitRepository creates a GitRepository of url that follows ref (nil: no spec.ref).
func newGitRepository(t *testing.T, ns, name, url string, ref map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gitRepositoryGVK)
	obj.SetNamespace(ns)
	obj.SetName(name)
	spec := map[string]any{"url": url, "interval": "10m"}
	if ref != nil {
		spec["ref"] = ref
	}
	obj.Object["spec"] = spec
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
}

// newKustomization creates a Kustomization of the GitRepository source.
func newKustomization(t *testing.T, ns, name, source string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kustomizationGVK)
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.Object["spec"] = map[string]any{"interval": "10m", "prune": true, "path": "./",
		"sourceRef": map[string]any{"kind": "GitRepository", "name": source}}
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
}

// requestedAt is the reconcile.fluxcd.io/requestedAt annotation of an object, "" without one.
func requestedAt(gvk schema.GroupVersionKind, ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
		return obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
	}
}

// post sends a request to the receiver and returns the status code and the message.
func post(t *testing.T, path string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	return postTo(t, serverURL, path, body, headers)
}

func postTo(t *testing.T, url, path string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	g := NewWithT(t)
	req, err := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	var out struct{ Message string }
	g.Expect(json.Unmarshal(raw, &out)).To(Succeed(), string(raw))
	return resp.StatusCode, out.Message
}

// mac is the hex HMAC of body keyed with key.
func mac(newHash func() hash.Hash, key string, body []byte) string {
	m := hmac.New(newHash, []byte(key))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

var (
	sha1Hash   = sha1.New
	sha256Hash = sha256.New
	sha512Hash = sha512.New
)

// githubPush is a push payload of GitHub's shape (Gitea's is the same), for the repository
// https://<host>/<repo> and the reference.
func githubPush(host, repo, ref string) []byte {
	b, _ := json.Marshal(map[string]any{
		"ref": ref, "before": "0000000000000000000000000000000000000000", "after": fmt.Sprintf("%040x", time.Now().UnixNano()),
		"repository": map[string]any{
			"full_name":      repo,
			"clone_url":      "https://" + host + "/" + repo + ".git",
			"ssh_url":        "git@" + host + ":" + repo + ".git",
			"html_url":       "https://" + host + "/" + repo,
			"default_branch": "main",
		},
	})
	return b
}

func ctx() context.Context { return context.Background() }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
