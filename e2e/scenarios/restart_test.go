package scenarios

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

const restartObjects = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: release
spec:
  default: opened
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 2s
  url: __URL__
  secretRef:
    name: git-credentials
  gates:
    refs:
    - release
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: apps
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: app
  path: ./apps
  interval: 1m
  prune: true
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
spec:
  interval: 2s
  url: __HELM__
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: app
spec:
  interval: 1m
  chart: restart-app
  version: '1.x'
  sourceRef:
    kind: HelmRepository
    name: charts
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: tenants
spec:
  serviceAccountName: applier
  inputs:
    - tenant: team1
    - tenant: team2
    - tenant: team3
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: tenant-<< inputs.tenant >>
      data:
        tenant: << inputs.tenant | quote >>
`

// apps are the raw manifests of the restart repository: n ConfigMaps, the first at version.
func apps(n int, version string) map[string]string {
	files := map[string]string{}
	for i := range n {
		v := "v1"
		if i == 0 {
			v = version
		}
		files[fmt.Sprintf("apps/cm-%d.yaml", i)] = configMapYAML(fmt.Sprintf("cm-%d", i), v)
	}
	return files
}

// Every controller is killed with SIGKILL in turn right after it was given work, and
// restarted with the same flags and storage: the system converges, nothing is lost or
// duplicated, and the artifacts are still served. Not parallel: the other scenarios time their
// controllers' reactions, which a dead controller would delay.
func TestScenarioRestart(t *testing.T) {
	s := newScenario(t, "restart")
	g := s.g
	ctx := context.Background()
	// Other scenarios restart controllers too: each is started once more here, and only once.
	starts := map[string]int{}
	for _, c := range sys.Controllers {
		starts[c.Name] = c.Starts()
	}
	s.gitSecret(s.ns, "git-credentials")
	repo, rev := s.newRepo("restart-app", apps(5, "v1"))
	servers.Helm.AddChart(t, testserver.ChartSpec{Name: "restart-app", Version: "1.0.0"})
	s.create(restartObjects, "__URL__", repo.HTTPURL(), "__HELM__", servers.Helm.URL())

	// converged checks the whole namespace: every object Ready for its generation, the Git
	// revision applied, the inventories and the objects in the cluster exactly as expected
	// (nothing lost, nothing twice), and every artifact served with its digest.
	converged := func(rev string, configMaps int, chartVersion string, tenants ...string) {
		t.Helper()
		var cms, tenantCMs []string
		for i := range configMaps {
			cms = append(cms, fmt.Sprintf("cm-%d", i))
		}
		for _, t := range tenants {
			tenantCMs = append(tenantCMs, "tenant-"+t)
		}
		// Each object's status must agree with itself and with the cluster: a controller killed
		// between two status writes may leave a Ready condition ahead of the rest for a moment.
		g.Eventually(func(g Gomega) {
			g.Expect(readyOf(gitRepositoryGVK, s.ns, "app")(g)).To(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + rev + "'"))
			g.Expect(revisionOf(gitRepositoryGVK, s.ns, "app")(g)).To(Equal("master@sha1:" + rev))
		}, timeout).Should(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(readyOf(manifestGenerationGVK, s.ns, "apps")(g)).To(Equal("True|ReconciliationSucceeded|Applied revision: master@sha1:" + rev))
			mg := mustObject(g, manifestGenerationGVK, s.ns, "apps")
			g.Expect(str(mg, "status", "lastAppliedRevision")).To(Equal("master@sha1:" + rev))
			g.Expect(inventory(mg)).To(HaveLen(configMaps))
			g.Expect(labelled(g, s.ns, "generator.toolkit.fluxcd.io/name", "apps")).To(Equal(cms))
		}, timeout).Should(Succeed())
		g.Eventually(readyOf(helmRepositoryGVK, s.ns, "charts"), timeout).Should(HavePrefix("True|"))
		g.Eventually(func(g Gomega) {
			g.Expect(readyOf(helmChartGVK, s.ns, "app")(g)).To(Equal("True|ChartPullSucceeded|pulled 'restart-app' chart with version '" + chartVersion + "'"))
			g.Expect(revisionOf(helmChartGVK, s.ns, "app")(g)).To(Equal(chartVersion))
		}, timeout).Should(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(readyOf(resourceSetGVK, s.ns, "tenants")(g)).To(HavePrefix("True|ReconciliationSucceeded|"))
			g.Expect(inventory(mustObject(g, resourceSetGVK, s.ns, "tenants"))).To(HaveLen(len(tenants)))
			g.Expect(labelled(g, s.ns, "resourceset.fluxcd.controlplane.io/name", "tenants")).To(Equal(tenantCMs))
		}, timeout).Should(Succeed())
		g.Eventually(conditionOf(gateGVK, s.ns, "release", "Opened"), timeout).Should(HavePrefix("True|"))

		for _, src := range []struct{ kind, name string }{{"GitRepository", "app"}, {"HelmRepository", "charts"}, {"HelmChart", "app"}} {
			obj := mustObject(g, gitRepositoryGVK.GroupVersion().WithKind(src.kind), s.ns, src.name)
			url, digest := str(obj, "status", "artifact", "url"), str(obj, "status", "artifact", "digest")
			got := httpGet(g, url)
			g.Expect(got.Status).To(Equal(200), url)
			g.Expect(got.Digest).To(Equal(digest), "%s %s: %s", src.kind, src.name, url)
		}
	}
	converged(rev, 5, "1.0.0", "team1", "team2", "team3")
	before := mustObject(g, gitRepositoryGVK, s.ns, "app")
	oldURL, oldDigest := str(before, "status", "artifact", "url"), str(before, "status", "artifact", "digest")

	// restart kills the controller with SIGKILL once work was handed to it, and starts it
	// again with the same command line.
	restart := func(name string, work func()) {
		t.Helper()
		c := sys.Controller(name)
		work()
		g.Expect(c.Kill()).To(Succeed())
		t.Logf("killed %s (SIGKILL)", name)
		g.Expect(c.Restart()).To(Succeed())
		readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		g.Expect(c.WaitReady(readyCtx)).To(Succeed())
	}

	// source-controller: killed while it fetches a new commit and a new chart version.
	restart("source-controller", func() {
		rev = repo.Commit(t, "Add cm-5", apps(6, "v1"))
		servers.Helm.AddChart(t, testserver.ChartSpec{Name: "restart-app", Version: "1.1.0"})
		testenv.Poke(t, k8s(), before)
		time.Sleep(200 * time.Millisecond) // give it the time to start on the work: the kill is the point
	})
	// The artifact of before the kill is served from disk by the new process (retried as a
	// consumer retries: /readyz answers before the artifact server listens).
	g.Eventually(func(g Gomega) fetched { return httpGet(g, oldURL) }, 10*time.Second).
		Should(And(HaveField("Status", 200), HaveField("Digest", oldDigest)))
	converged(rev, 6, "1.1.0", "team1", "team2", "team3")

	// manifest-generator: killed while it applies a new revision.
	rev = repo.Commit(t, "Change cm-0, add cm-6", apps(7, "v2"))
	restart("manifest-generator", func() {
		g.Eventually(revisionOf(gitRepositoryGVK, s.ns, "app"), timeout, 50*time.Millisecond).Should(Equal("master@sha1:" + rev))
	})
	converged(rev, 7, "1.1.0", "team1", "team2", "team3")
	cm := mustObject(g, configMapGVK, s.ns, "cm-0")
	g.Expect(cm.Object["data"]).To(Equal(map[string]any{"version": "v2"}))

	// resourceset-controller: killed while it applies a new input.
	restart("resourceset-controller", func() {
		g.Eventually(func(g Gomega) {
			rset := mustObject(g, resourceSetGVK, s.ns, "tenants")
			inputs, _, _ := unstructured.NestedSlice(rset.Object, "spec", "inputs")
			g.Expect(unstructured.SetNestedSlice(rset.Object, append(inputs, map[string]any{"tenant": "team4"}), "spec", "inputs")).To(Succeed())
			g.Expect(k8s().Update(ctx, rset)).To(Succeed())
		}, timeout).Should(Succeed())
	})
	converged(rev, 7, "1.1.0", "team1", "team2", "team3", "team4")

	// gating-controller: killed while it closes a gate; once back, the gate is closed (the
	// request is handled once), the source is held, and opening it releases the next commit.
	restart("gating-controller", func() {
		s.kubectlGate("close", "release", "maintenance", "-n", s.ns)
	})
	g.Eventually(func(g Gomega) string {
		gate := mustObject(g, gateGVK, s.ns, "release")
		return str(gate, "status", "lastHandledCloseAt") + " " + gate.GetAnnotations()["close.gate.fluxcd.io/requestedAt"]
	}, timeout).Should(MatchRegexp(`^(\S+) (\S+)$`), "the close request is handled")
	gate := mustObject(g, gateGVK, s.ns, "release")
	g.Expect(str(gate, "status", "lastHandledCloseAt")).To(Equal(gate.GetAnnotations()["close.gate.fluxcd.io/requestedAt"]))
	g.Expect(condition(gate, "Opened")).To(Equal("False|ReconciliationSucceeded|Gate close requested"))
	// The status agrees with itself: the latest transition of the history is this close, and
	// it is there once.
	history, _, _ := unstructured.NestedSlice(gate.Object, "status", "history")
	g.Expect(history).NotTo(BeEmpty())
	g.Expect(history[0]).To(And(HaveKeyWithValue("opened", false), HaveKeyWithValue("cause", "request"), HaveKeyWithValue("reason", "maintenance")),
		"the close is the latest transition of the history: %v", history)
	closes := 0
	for _, h := range history {
		if m := h.(map[string]any); m["reason"] == "maintenance" {
			closes++
		}
	}
	g.Expect(closes).To(Equal(1), "the close request is in the history once: %v", history)
	g.Eventually(conditionOf(gitRepositoryGVK, s.ns, "app", "Blocked"), timeout).Should(HavePrefix("True|GateClosed|"))
	rev = repo.Commit(t, "Add cm-7", apps(8, "v2"))
	s.kubectlGate("open", "release", "maintenance done", "-n", s.ns)
	converged(rev, 8, "1.1.0", "team1", "team2", "team3", "team4")
	g.Expect(conditionOf(gitRepositoryGVK, s.ns, "app", "Blocked")(g)).To(BeEmpty())

	for _, name := range []string{"source-controller", "manifest-generator", "resourceset-controller", "gating-controller"} {
		g.Expect(sys.Controller(name).Starts()).To(Equal(starts[name]+1), name)
	}
}

// labelled returns the names of the ConfigMaps of ns with the label, sorted.
func labelled(g Gomega, ns, label, value string) []string {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(configMapGVK.GroupVersion().WithKind("ConfigMapList"))
	g.Expect(k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{label: value})).To(Succeed())
	var names []string
	for _, o := range list.Items {
		if o.GetDeletionTimestamp() == nil {
			names = append(names, o.GetName())
		}
	}
	sort.Strings(names)
	return names
}
