package gatereceiver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/events"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	gatecontroller "github.com/sluice-gitops/sluice/gating-controller/internal/controller"
)

var (
	env *testenv.Env
	k8s client.Client
	// receiverURL is the base URL of the receiver under test, served on a loopback port next to
	// the real Gate controller, against the real API server.
	receiverURL string
	// controllerUser is who the API server knows the controller as: the requestedBy of its requests.
	controllerUser string
	// newServer makes another receiver, with other limits, on the manager's client.
	newServer func(Limits) *Server
	// logs holds what the receiver and the controller logged.
	logs = &testenv.LogBuffer{}
)

func TestMain(m *testing.M) {
	if fuzzingOnly() {
		os.Exit(m.Run())
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = gatingv1.AddToScheme(scheme)
	var err error
	if env, err = testenv.Start(testenv.Options{Scheme: scheme, StaticTokens: []testenv.StaticToken{anonymousToken}}); err != nil {
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

// fuzzingOnly tells whether this process only fuzzes (a fuzz worker, or `go test -run '^$' -fuzz`
// as `make fuzz` runs it): the fuzz targets parse in memory, and each worker would otherwise
// start a control plane of its own.
func fuzzingOnly() bool {
	flag.Parse()
	if w := flag.Lookup("test.fuzzworker"); w != nil && w.Value.String() == "true" {
		return true
	}
	fuzz, run := flag.Lookup("test.fuzz"), flag.Lookup("test.run")
	return fuzz != nil && fuzz.Value.String() != "" && run != nil && run.Value.String() == "^$"
}

// startManager runs the Gate controller and the receiver as main.go wires them; Secrets are read
// uncached, as bootstrap's manager reads them.
func startManager(ctx context.Context, scheme *runtime.Scheme) error {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", gatecontroller.ControllerName)
	if err != nil {
		return err
	}
	gates := &gatecontroller.GateReconciler{Client: mgr.GetClient(), EventRecorder: recorder, Clock: clock.RealClock{}}
	if err := gates.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 2}); err != nil {
		return err
	}
	if controllerUser, err = WhoAmI(ctx, env.Config); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	receiverURL = "http://" + ln.Addr().String()
	// APIServer is the control plane's admin config, as main.go passes the controller's: the
	// receiver must take only its host and CA.
	srv := &Server{Listener: ln, Client: mgr.GetClient(), EventRecorder: recorder, RequestedBy: controllerUser, APIServer: env.Config}
	newServer = func(l Limits) *Server {
		return &Server{Client: mgr.GetClient(), EventRecorder: recorder, RequestedBy: controllerUser, APIServer: env.Config, Limits: l}
	}
	if err := mgr.Add(srv); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// startReceiver serves another receiver, with these limits, on a loopback port until the test
// ends, and returns its URL.
func startReceiver(t *testing.T, limits Limits) string {
	t.Helper()
	return startReplica(t, newServer(limits))
}

// startReplica serves srv on a loopback port until the test ends, and returns its URL.
func startReplica(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv.Listener = ln
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Start(ctx) }()
	return "http://" + ln.Addr().String()
}

// newReceiverGate creates a gate closed by default whose receiver takes token, held in the Secret
// "<name>-token".
func newReceiverGate(t *testing.T, ns, name, token string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-token"},
		Data:       map[string][]byte{gatingv1.ReceiverTokenKey: []byte(token)},
	}
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	gate := &gatingv1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatingv1.GateSpec{
			Default:  gatingv1.GateClosed,
			Receiver: &gatingv1.GateReceiver{SecretRef: meta.LocalObjectReference{Name: secret.Name}},
		},
	}
	g.Expect(k8s.Create(ctx, gate)).To(Succeed())
	// The receiver reads gates from the controller's cache, and the history starts once the
	// controller has evaluated the gate.
	g.Eventually(opened(ns, name), 10*time.Second).Should(Equal("False"))
}

// requestBody is a body as a caller sends it, made at the given time.
func requestBody(reason string, at time.Time) []byte {
	b, _ := json.Marshal(map[string]string{"reason": reason, "timestamp": at.UTC().Format(time.RFC3339)})
	return b
}

// withToken and withSignature authenticate a request the two ways the receiver accepts.
func withToken(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

func withSignature(token string, body []byte) map[string]string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	return map[string]string{"X-Signature": "sha256=" + hex.EncodeToString(mac.Sum(nil))}
}

// post sends a request to the receiver and returns the status code and the message.
func post(t *testing.T, path string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	return postTo(t, receiverURL, path, body, headers)
}

// postTo is post to the receiver at url.
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

func getGate(g Gomega, ns, name string) *gatingv1.Gate {
	gate := &gatingv1.Gate{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gate)).To(Succeed())
	return gate
}

// opened is the status of the gate's Opened condition ("True", "False"), or "" before the
// controller has evaluated it.
func opened(ns, name string) func(g Gomega) string {
	return func(g Gomega) string {
		c := conditions.Get(getGate(g, ns, name), gatesapi.OpenedCondition)
		if c == nil {
			return ""
		}
		return string(c.Status)
	}
}

// requestAnnotations are the gate's request annotations: the receiver writes only these.
func requestAnnotations(g Gomega, ns, name string) map[string]string {
	out := map[string]string{}
	for k, v := range getGate(g, ns, name).GetAnnotations() {
		if strings.Contains(k, ".gate.fluxcd.io/") {
			out[k] = v
		}
	}
	return out
}

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
