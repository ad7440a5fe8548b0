package scenarios

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// probeFlux is a .flux.yaml whose generator is a tenant's attempt at other tenants' artifacts: it
// fetches each URL of its environment and prints the HTTP status codes as a ConfigMap.
const probeFlux = `version: 1
commandUpdated:
  generators:
    - command: |
        code() { curl -s -o /dev/null -w '%{http_code}' "$1"; }
        printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  own: "%s"\n  unsigned: "%s"\n  foreign: "%s"\n' \
          "$(code "$OWN")" "$(code "$UNSIGNED")" "$(code "$FOREIGN")"
`

const probeSource = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: __NAME__
  namespace: __NAMESPACE__
spec:
  interval: 1h
  url: __URL__
  ref:
    branch: master
  secretRef:
    name: git-credentials
`

const probeGeneration = `apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: probe
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./
  interval: 10m
  egress: true
  env:
    - name: OWN
      value: __OWN__
    - name: UNSIGNED
      value: __UNSIGNED__
    - name: FOREIGN
      value: __FOREIGN__
`

// A tenant's generator, run by the manifest-generator's runner, tries another tenant's
// artifact: its path without a signature, and with the signature of the tenant's own artifact
// URL. The artifact server refuses both, while the same generator fetches its own artifact
// through its signed URL.
func TestScenarioAGeneratorCannotFetchAnotherTenantsArtifact(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "artifacts-a")
	g := s.g
	other := s.namespace("artifacts-b")
	s.gitSecret(s.ns, "git-credentials")
	s.gitSecret(other, "git-credentials")

	secretRepo, _ := s.newRepo("artifacts-b-private", map[string]string{"secret.yaml": "token: of-tenant-b\n"})
	s.create(probeSource, "__NAME__", "private", "__NAMESPACE__", other, "__URL__", secretRepo.HTTPURL())
	fleet, _ := s.newRepo("artifacts-a-fleet", map[string]string{".flux.yaml": probeFlux})
	s.create(probeSource, "__NAME__", "fleet", "__NAMESPACE__", s.ns, "__URL__", fleet.HTTPURL())

	urlOf := func(ns, name string) (url, path string) {
		obj := settled(g, gitRepositoryGVK, ns, name, HavePrefix("True|Succeeded|"), func(g Gomega, obj *unstructured.Unstructured) {
			g.Expect(str(obj, "status", "artifact", "url")).NotTo(BeEmpty())
		})
		return str(obj, "status", "artifact", "url"), str(obj, "status", "artifact", "path")
	}
	ownURL, ownPath := urlOf(s.ns, "fleet")
	foreignURL, foreignPath := urlOf(other, "private")
	base := strings.TrimSuffix(ownURL, ownPath)                              // http://<server>/<signature>/
	server := base[:strings.LastIndex(strings.TrimSuffix(base, "/"), "/")+1] // http://<server>/
	g.Expect(httpGet(g, foreignURL).Status).To(Equal(200), "the other tenant's own URL works")

	s.create(probeGeneration, "__OWN__", ownURL, "__UNSIGNED__", server+foreignPath, "__FOREIGN__", base+foreignPath)
	settled(g, manifestGenerationGVK, s.ns, "probe", HavePrefix("True|ReconciliationSucceeded|"), nil)
	probe := mustObject(g, configMapGVK, s.ns, "probe")
	data, _, _ := unstructured.NestedStringMap(probe.Object, "data")
	g.Expect(data).To(Equal(map[string]string{"own": "200", "unsigned": "404", "foreign": "404"}))
}
