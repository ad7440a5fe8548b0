package controller

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// rsipService is an HTTPS inputs service as a team would run one: GET /tenants answers JSON to
// requests with the right credentials (a bearer token, or basic auth), 401 to the others. The
// answer can be changed while it runs.
type rsipService struct {
	srv *httptest.Server

	mu       sync.Mutex
	status   int
	body     string
	requests int
}

func rsipNewService(t *testing.T, checkAuth func(*http.Request) bool, body string) *rsipService {
	s := &rsipService{status: http.StatusOK, body: body}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		status, body := s.status, s.body
		s.requests++
		s.mu.Unlock()
		switch {
		case req.URL.Path != "/tenants" || req.Method != http.MethodGet:
			http.NotFound(w, req)
		case !checkAuth(req):
			w.Header().Set("WWW-Authenticate", `Bearer realm="inputs"`)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		case status != http.StatusOK:
			http.Error(w, `{"error":"backend unavailable"}`, status)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// answer changes the status and body of the next answers.
func (s *rsipService) answer(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *rsipService) requestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// caPEM is the server's certificate, for a certSecretRef's ca.crt.
func (s *rsipService) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

func rsipServiceManifest(name, url, extra string) string {
	return fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: %s
spec:
  type: ExternalService
  url: %s
  certSecretRef:
    name: service-ca
%s`, name, url, extra)
}

// An ExternalService behind a bearer token, with a private CA: its inputs are exported with the
// default values merged in. When the service answers 500, and then garbage, the provider says so
// (Ready=False, ReconciliationFailed, a Warning event) and keeps the inputs it exported last; when
// it answers again, the new inputs are exported. The token never reaches events or logs.
func TestInputProviderExternalServiceBearerToken(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	const token = "rsip-token-9c1e7d"
	svc := rsipNewService(t, func(req *http.Request) bool { return req.Header.Get("Authorization") == "Bearer "+token },
		`{"inputs": [
		  {"id": "team1", "tenant": "team1", "replicas": 2},
		  {"id": "team2", "tenant": "team2", "replicas": 3, "env": "staging", "app": {"version": "6.6.x"}}
		]}`)
	rsipSecret(t, ns, "service-ca", corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": svc.caPEM()})
	rsipSecret(t, ns, "service-token", corev1.SecretTypeOpaque, map[string][]byte{"token": []byte(token)})

	obj := rsipCreate(t, ns, rsipServiceManifest("tenants", svc.srv.URL+"/tenants", `
  secretRef:
    name: service-token
  defaultValues:
    env: production
    app:
      version: "6.7.x"
`))
	key := client.ObjectKeyFromObject(obj)

	obj = rsipReady(t, key)
	g.Expect(rsipInputs(g, obj)).To(Equal([]map[string]any{
		{"id": "team1", "tenant": "team1", "replicas": int64(2), "env": "production", "app": map[string]any{"version": "6.7.x"}},
		{"id": "team2", "tenant": "team2", "replicas": int64(3), "env": "staging", "app": map[string]any{"version": "6.6.x"}},
	}))
	g.Expect(rsipEventFor(t, key, obj.Status.LastExportedRevision)).To(Equal("ReconciliationSucceeded: exported 2 inputs with revision " + obj.Status.LastExportedRevision))
	good := obj.Status.DeepCopy()

	// The service fails: the last inputs stay.
	svc.answer(http.StatusInternalServerError, "")
	poke(t, obj)
	g.Expect(rsipFailed(t, key)).To(Equal("GET " + svc.srv.URL + "/tenants: 500 Internal Server Error"))
	obj = rsipGet(g, key)
	g.Expect(obj.Status.ExportedInputs).To(Equal(good.ExportedInputs))
	g.Expect(obj.Status.LastExportedRevision).To(Equal(good.LastExportedRevision))
	g.Expect(conditions.Get(obj, meta.ReconcilingCondition)).NotTo(BeNil())
	g.Expect(conditions.Get(obj, meta.StalledCondition)).To(BeNil())
	g.Eventually(rsipEventMessages(key), timeout).Should(ContainElement(
		"Warning ReconciliationFailed: GET " + svc.srv.URL + "/tenants: 500 Internal Server Error"))

	// Garbage: the same.
	svc.answer(http.StatusOK, `{"inputs": [{"id": "team1"}, {"id": "team1"}]}`)
	poke(t, obj)
	g.Expect(rsipFailed(t, key)).To(ContainSubstring(`inputs 0 and 1 have the same id: ids must be unique`))
	svc.answer(http.StatusOK, `<html>maintenance</html>`)
	poke(t, obj)
	g.Expect(rsipFailed(t, key)).To(ContainSubstring("is not a JSON object"))
	g.Expect(rsipGet(g, key).Status.LastExportedRevision).To(Equal(good.LastExportedRevision))

	// Back: new inputs.
	svc.answer(http.StatusOK, `{"inputs": [{"id": "team3", "tenant": "team3"}]}`)
	poke(t, obj)
	obj = rsipReady(t, key)
	g.Expect(rsipInputs(g, obj)).To(Equal([]map[string]any{
		{"id": "team3", "tenant": "team3", "env": "production", "app": map[string]any{"version": "6.7.x"}},
	}))
	g.Expect(conditions.Get(obj, meta.ReconcilingCondition)).To(BeNil())
	g.Expect(rsipEventFor(t, key, obj.Status.LastExportedRevision)).To(Equal("ReconciliationSucceeded: exported 1 input with revision " + obj.Status.LastExportedRevision))

	for _, e := range rsipEventMessages(key)(g) {
		g.Expect(e).NotTo(ContainSubstring(token))
	}
	rsipLogsFree(t, token)
}

// Basic credentials (username and password); a Secret that does not exist yet is an ordinary
// failure that heals when the Secret is created; a wrong password is the service's 401.
func TestInputProviderExternalServiceBasicAuth(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	svc := rsipNewService(t, func(req *http.Request) bool {
		u, p, ok := req.BasicAuth()
		return ok && u == "flux" && p == "rsip-basic-pw-77"
	}, `{"inputs": [{"id": "eu-1", "region": "eu-west-1"}]}`)
	rsipSecret(t, ns, "service-ca", corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": svc.caPEM()})

	obj := rsipCreate(t, ns, rsipServiceManifest("regions", svc.srv.URL+"/tenants", `
  secretRef:
    name: service-basic
`))
	key := client.ObjectKeyFromObject(obj)
	g.Expect(rsipFailed(t, key)).To(Equal("Secret '" + ns + "/service-basic' not found"))
	g.Expect(rsipGet(g, key).Status.LastExportedRevision).To(BeEmpty())

	creds := rsipSecret(t, ns, "service-basic", corev1.SecretTypeBasicAuth,
		map[string][]byte{"username": []byte("flux"), "password": []byte("rsip-basic-pw-77")})
	poke(t, obj)
	obj = rsipReady(t, key)
	g.Expect(rsipInputs(g, obj)).To(Equal([]map[string]any{{"id": "eu-1", "region": "eu-west-1"}}))

	creds.Data["password"] = []byte("rsip-wrong-pw-88")
	g.Expect(k8s.Update(t.Context(), creds)).To(Succeed())
	poke(t, obj)
	g.Expect(rsipFailed(t, key)).To(Equal("GET " + svc.srv.URL + "/tenants: 401 Unauthorized"))
	g.Expect(rsipInputs(g, rsipGet(g, key))).To(Equal([]map[string]any{{"id": "eu-1", "region": "eu-west-1"}}))
	rsipLogsFree(t, "rsip-basic-pw-77", "rsip-wrong-pw-88")
}

// fluxcd.controlplane.io/reconcileEvery sets how often the service is asked: a change of its
// answer is exported without a reconcile request. filter.limit keeps the first inputs.
func TestInputProviderReconcileEvery(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	svc := rsipNewService(t, func(*http.Request) bool { return true }, `{"inputs": [{"id": "a"}]}`)
	rsipSecret(t, ns, "service-ca", corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": svc.caPEM()})

	obj := rsipCreate(t, ns, rsipServiceManifest("polled", svc.srv.URL+"/tenants", `
  filter:
    limit: 2
`))
	key := client.ObjectKeyFromObject(obj)
	obj = rsipReady(t, key)
	g.Expect(rsipInputs(g, obj)).To(Equal([]map[string]any{{"id": "a"}}))

	annotate(t, obj, rsv1.ReconcileEveryAnnotation, "1s")
	svc.answer(http.StatusOK, `{"inputs": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}`)
	g.Eventually(func(g Gomega) []map[string]any { return rsipInputs(g, rsipGet(g, key)) }, timeout).Should(
		Equal([]map[string]any{{"id": "a"}, {"id": "b"}}))
	g.Eventually(svc.requestCount, timeout).Should(BeNumerically(">=", 4))
}
