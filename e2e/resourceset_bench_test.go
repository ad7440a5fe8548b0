package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// BenchmarkResourceSetProcess runs the resourceset-controller binary with the flags of deploy/
// (bin/, `make build`), as a process of its own, and applies one ResourceSet of N inputs × 5
// ConfigMaps. It reports the time from creation to Ready, the time of a no-op reconcile, and the
// controller process's peak RSS, what it grew by per object, and its CPU time (from /proc).
// SLUICE_BENCH_RESOURCESET_OBJECTS runs one size instead (25000 for the ten times larger run).
//
//	go test -run '^$' -bench ResourceSetProcess -benchtime 1x .
func BenchmarkResourceSetProcess(b *testing.B) {
	sizes := []int{200, 1000}
	if objects := benchCount(b, "SLUICE_BENCH_RESOURCESET_OBJECTS", 0); objects > 0 {
		sizes = []int{objects / 5}
	}
	for _, inputs := range sizes {
		b.Run(fmt.Sprintf("objects=%d", inputs*5), func(b *testing.B) {
			dir := b.TempDir()
			c := startController(b, "resourceset-controller", kubeconfigIn(b, dir), dir)
			// The API server's first request for a CRD builds its handler: done once before the
			// measure, as in a running cluster.
			waitResourceSetReady(b, applyResourceSet(b, newBenchNamespace(b), "warm-up", 1), "")
			idle := usage(b, c)
			for b.Loop() {
				ns := newBenchNamespace(b)
				before := usage(b, c)
				start := time.Now()
				rs := applyResourceSet(b, ns, "bench", inputs)
				waitResourceSetReady(b, rs, "")
				b.ReportMetric(time.Since(start).Seconds(), "s-to-ready")

				start = time.Now()
				rs.SetAnnotations(map[string]string{"reconcile.fluxcd.io/requestedAt": "noop"})
				NewWithT(b).Expect(env.Client.Update(context.Background(), rs)).To(Succeed())
				waitResourceSetReady(b, rs, "noop")
				b.ReportMetric(time.Since(start).Seconds(), "s-noop-reconcile")

				after := usage(b, c)
				reportMemory(b, idle, after, inputs*5)
				b.ReportMetric(float64(idle.PeakRSS)/(1<<20), "MiB-peak-rss-idle")
				b.ReportMetric((after.CPU - before.CPU).Seconds(), "cpu-s")
			}
		})
	}
}

// applyResourceSet creates a ResourceSet of n inputs, each rendering 5 ConfigMaps.
func applyResourceSet(b testing.TB, ns, name string, n int) *unstructured.Unstructured {
	b.Helper()
	var inputs strings.Builder
	for i := range n {
		fmt.Fprintf(&inputs, "    - idx: %q\n", fmt.Sprint(i))
	}
	var resources strings.Builder
	for k := range 5 {
		fmt.Fprintf(&resources, `    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: cm-<< inputs.idx >>-%d
        namespace: %s
      data:
        idx: << inputs.idx | quote >>
`, k, ns)
	}
	manifest := fmt.Sprintf(`apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: %s
  namespace: %s
spec:
  serviceAccountName: applier
  inputs:
%s  resources:
%s`, name, ns, inputs.String(), resources.String())
	rs := &unstructured.Unstructured{}
	g := NewWithT(b)
	g.Expect(yaml.Unmarshal([]byte(manifest), &rs.Object)).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), rs)).To(Succeed())
	return rs
}

// waitResourceSetReady waits until the ResourceSet handled the reconcile request and is Ready
// at its generation.
func waitResourceSetReady(b testing.TB, rs *unstructured.Unstructured, request string) {
	b.Helper()
	NewWithT(b).Eventually(func(g Gomega) bool {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(rs), rs)).To(Succeed())
		handled, _, _ := unstructured.NestedString(rs.Object, "status", "lastHandledReconcileAt")
		observed, _, _ := unstructured.NestedInt64(rs.Object, "status", "observedGeneration")
		conditions, _, _ := unstructured.NestedSlice(rs.Object, "status", "conditions")
		for _, c := range conditions {
			c := c.(map[string]any)
			if c["type"] == "Ready" {
				return handled == request && observed == rs.GetGeneration() && c["status"] == "True"
			}
		}
		return false
	}, 5*time.Minute, 20*time.Millisecond).Should(BeTrue())
}

// newBenchNamespace creates a namespace with the account its ResourceSets apply as: the
// controller runs with --default-service-account=default, as deploy/ does, so a ResourceSet
// names an account allowed its ConfigMaps.
func newBenchNamespace(b testing.TB) string {
	b.Helper()
	g := NewWithT(b)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "applier"}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "applier"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "applier"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "applier"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "applier", Namespace: ns.Name}},
	})).To(Succeed())
	return ns.Name
}

func usage(b testing.TB, c *harness.Controller) harness.Usage {
	b.Helper()
	u, err := c.Usage()
	NewWithT(b).Expect(err).NotTo(HaveOccurred())
	return u
}
