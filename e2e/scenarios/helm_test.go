package scenarios

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// The walkthrough of source-controller/docs/helmchart.md, with podinfo served by the local Helm repository.
const helmWalkthrough = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: podinfo
spec:
  interval: 2s
  url: __HELM__
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: HelmChart
metadata:
  name: podinfo
spec:
  interval: 5m0s
  chart: podinfo
  reconcileStrategy: ChartVersion
  sourceRef:
    kind: HelmRepository
    name: podinfo
  version: '5.*'
`

const helmTenants = `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: podinfo
spec:
  serviceAccountName: applier
  inputs:
    - tenant: team1
      version: "5.2.x"
    - tenant: team2
      version: "6.x"
  resources:
    - apiVersion: source.toolkit.fluxcd.io/v1
      kind: HelmChart
      metadata:
        name: podinfo-<< inputs.tenant >>
      spec:
        interval: 10m
        chart: podinfo
        version: << inputs.version | quote >>
        sourceRef:
          kind: HelmRepository
          name: podinfo
`

// Helm charts: the walkthrough of docs/helmchart.md against the local Helm repository, a new chart version
// picked up through the repository's new index, and a ResourceSet making a HelmChart per tenant.
func TestScenarioHelm(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "helm")
	g := s.g
	for _, v := range []string{"5.2.0", "5.2.1", "6.0.0"} {
		servers.Helm.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: v, AppVersion: v, Values: map[string]any{"replicaCount": 1}})
	}
	s.create(helmWalkthrough, "__HELM__", servers.Helm.URL())
	storage := "http://" + sys.Controller("source-controller").StorageAddr + "/"

	chart := settled(g, helmChartGVK, s.ns, "podinfo", Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '5.2.1'"), artifactRevision("5.2.1"))
	g.Expect(condition(chart, "ArtifactInStorage")).To(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '5.2.1'"))
	g.Expect(str(chart, "status", "artifact", "revision")).To(Equal("5.2.1"))
	g.Expect(str(chart, "status", "artifact", "path")).To(Equal("helmchart/helm/podinfo/podinfo-5.2.1.tgz"))
	g.Expect(str(chart, "status", "url")).To(MatchRegexp(`^` + regexp.QuoteMeta(storage) + `[A-Za-z0-9_-]{22}/helmchart/helm/podinfo/latest\.tar\.gz$`))
	g.Expect(str(chart, "status", "observedChartName")).To(Equal("podinfo"))
	g.Expect(str(chart, "status", "observedSourceArtifactRevision")).To(Equal(str(mustObject(g, helmRepositoryGVK, s.ns, "podinfo"), "status", "artifact", "revision")))
	got := httpGet(g, str(chart, "status", "artifact", "url"))
	g.Expect(got.Digest).To(Equal(str(chart, "status", "artifact", "digest")))
	g.Expect(tarFile(g, got.Body, "podinfo/Chart.yaml")).To(ContainSubstring("version: 5.2.1"))

	// `kubectl get helmchart` as the walkthrough shows it.
	out := kubectl(s, "get", "helmchart", "-n", s.ns)
	g.Expect(out).To(MatchRegexp(`(?m)^NAME\s+CHART\s+VERSION\s+SOURCE KIND\s+SOURCE NAME\s+AGE\s+GATES\s+READY\s+STATUS$`))
	g.Expect(out).To(MatchRegexp(`(?m)^podinfo\s+podinfo\s+` + regexp.QuoteMeta("5.*") + `\s+HelmRepository\s+podinfo\s+\S+\s+True\s+pulled 'podinfo' chart with version '5.2.1'$`))

	// A new version in range: the repository's new index makes the chart pull it.
	servers.Helm.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "5.3.0", AppVersion: "5.3.0"})
	chart = settled(g, helmChartGVK, s.ns, "podinfo", Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '5.3.0'"), artifactRevision("5.3.0"))
	digest := str(chart, "status", "artifact", "digest")
	latest := httpGet(g, str(chart, "status", "url"))
	g.Expect(latest.Status).To(Equal(200), "latest.tar.gz: %s", latest.Body)
	g.Expect(latest.Digest).To(Equal(digest), "latest.tar.gz is the current artifact")

	// A HelmChart per tenant from a ResourceSet, each with its own version range.
	rset := s.create(helmTenants)[0]
	settled(g, resourceSetGVK, s.ns, "podinfo", HavePrefix("True|ReconciliationSucceeded|"), inventoryOf([]string{
		"helm_podinfo-team1_source.toolkit.fluxcd.io_HelmChart", "helm_podinfo-team2_source.toolkit.fluxcd.io_HelmChart"}))
	settled(g, helmChartGVK, s.ns, "podinfo-team1", Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '5.2.1'"), artifactRevision("5.2.1"))
	team2 := settled(g, helmChartGVK, s.ns, "podinfo-team2", Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.0'"), artifactRevision("6.0.0"))
	team2URL := str(team2, "status", "artifact", "url")
	g.Expect(httpGet(g, team2URL).Status).To(Equal(200))
	labels := team2.GetLabels()
	g.Expect(labels).To(HaveKeyWithValue("resourceset.fluxcd.controlplane.io/name", "podinfo"))

	// team2 leaves: its HelmChart is deleted, and with it its artifacts.
	setInputs(g, rset, []any{map[string]any{"tenant": "team1", "version": "5.2.x"}})
	g.Eventually(exists(helmChartGVK, s.ns, "podinfo-team2"), timeout).Should(BeFalse())
	g.Eventually(func(g Gomega) int { return httpGet(g, team2URL).Status }, timeout).Should(Equal(404))
	g.Expect(readyOf(helmChartGVK, s.ns, "podinfo-team1")(g)).To(HavePrefix("True|"))
}

// kubectl runs the kubectl of bin/ against the system.
func kubectl(s *scenario, args ...string) string {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(sys.Env.Root, "bin", "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sys.Kubeconfig)
	out, err := cmd.CombinedOutput()
	s.g.Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}
