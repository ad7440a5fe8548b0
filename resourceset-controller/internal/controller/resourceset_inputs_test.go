package controller

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// inputService is an HTTP service answering a ResourceSetInputProvider of type
// ExternalService: {"inputs": [...]}, or a status code when it is made to fail.
type inputService struct {
	mu     sync.Mutex
	inputs []map[string]any
	status int
	*httptest.Server
}

func newInputService(t *testing.T, inputs ...map[string]any) *inputService {
	s := &inputService{inputs: inputs, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.status != http.StatusOK {
			http.Error(w, "unavailable", s.status)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"inputs": s.inputs})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *inputService) set(status int, inputs ...map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.inputs = status, append([]map[string]any{}, inputs...) // [] rather than null
}

// createProvider creates an ExternalService provider of the service.
func createProvider(t *testing.T, ns, name string, s *inputService) {
	t.Helper()
	p := &rsv1.ResourceSetInputProvider{}
	NewWithT(t).Expect(yaml.Unmarshal([]byte(fmt.Sprintf(`
metadata:
  name: %s
  namespace: %s
  labels:
    inputs: tenants
spec:
  type: ExternalService
  url: %s
  insecure: true
`, name, ns, s.URL)), p)).To(Succeed())
	NewWithT(t).Expect(k8s.Create(t.Context(), p)).To(Succeed())
}

const tenantConfigMaps = `
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: tenant-<< inputs.id >>
        namespace: NAMESPACE
      data:
        tenant: << inputs.tenant | quote >>
`

// Inputs from a provider (selected by label): a failing provider keeps the objects its last
// inputs generated (nothing is pruned because of an error); a healthy provider that exports no
// inputs prunes them, and the event says so.
func TestResourceSetProviderFailureKeepsResources(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	svc := newInputService(t, map[string]any{"id": "a", "tenant": "team-a"}, map[string]any{"id": "b", "tenant": "team-b"})
	createProvider(t, ns, "tenants", svc)
	key := createResourceSet(t, ns, `
metadata:
  name: tenants
spec:
  inputsFrom:
    - kind: ResourceSetInputProvider
      selector:
        matchLabels:
          inputs: tenants
`+tenantConfigMaps)
	// (The first reconcile may list the providers before the cache has this one: the provider's
	// creation triggers another.)
	g.Eventually(func(g Gomega) []string { return inventoryIDs(g, key) }, timeout).Should(
		ConsistOf(ns+"_tenant-a__ConfigMap@v1", ns+"_tenant-b__ConfigMap@v1"))
	readyIn(t, key)

	// The service fails: the provider says so, the ResourceSet keeps its objects.
	svc.set(http.StatusServiceUnavailable)
	provider := &rsv1.ResourceSetInputProvider{}
	provider.Namespace, provider.Name = ns, "tenants"
	poke(t, provider)
	g.Eventually(func(g Gomega) string {
		p := &rsv1.ResourceSetInputProvider{}
		g.Expect(k8s.Get(t.Context(), keyOf(provider), p)).To(Succeed())
		return readyStatus(p)
	}, timeout).Should(Equal("False"))
	poke(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)})
	readyIn(t, key)
	g.Expect(inventoryIDs(g, key)).To(HaveLen(2))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "tenant-b")).NotTo(BeNil())

	// The service answers again, with one tenant gone: that tenant's objects are pruned.
	svc.set(http.StatusOK, map[string]any{"id": "a", "tenant": "team-a"})
	poke(t, provider)
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "tenant-b") }, timeout).Should(BeNil())
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "tenant-a")).NotTo(BeNil())

	// An empty answer from a healthy service is an answer: everything goes.
	svc.set(http.StatusOK)
	poke(t, provider)
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "tenant-a") }, timeout).Should(BeNil())
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(MatchRegexp(
		`^Normal GarbageCollectionSucceeded: ConfigMap/` + ns + `/tenant-a deleted\nGarbage collection finished in`)))
	// (The status is written after the garbage collection's event.)
	g.Eventually(func(g Gomega) []string { return inventoryIDs(g, key) }, timeout).Should(BeEmpty())
	readyIn(t, key)
}

// Permute over three providers of 22 inputs each would render 10,648 combinations: the
// ResourceSet stalls with a message saying so, before rendering anything.
func TestResourceSetPermuteCap(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	var many []map[string]any
	for i := range 22 {
		many = append(many, map[string]any{"id": fmt.Sprint(i)})
	}
	svc := newInputService(t, many...)
	createProvider(t, ns, "regions", svc)
	createProvider(t, ns, "clusters", svc)
	createProvider(t, ns, "tiers", svc)
	key := createResourceSet(t, ns, `
metadata:
  name: matrix
spec:
  inputStrategy:
    name: Permute
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: regions
    - kind: ResourceSetInputProvider
      name: clusters
    - kind: ResourceSetInputProvider
      name: tiers
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: << inputs.regions.id >>-<< inputs.clusters.id >>-<< inputs.tiers.id >>
        namespace: NAMESPACE
`)
	g.Eventually(rsetCondition(key, meta.StalledCondition), timeout).Should(And(
		HavePrefix("True|BuildFailed|build failed: "), ContainSubstring("10,648"), ContainSubstring("10,000")))
	g.Expect(getResourceSet(g, key).Status.Inventory).To(BeNil())
}
