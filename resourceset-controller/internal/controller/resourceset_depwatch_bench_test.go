package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkDependencyRelease measures how soon a ResourceSet waiting on a dependency is
// released once the dependency is met: a Secret that appears (a watch of the Secret kind), and a
// ResourceSet that becomes ready. The test suite's --requeue-dependency is ten minutes, so what
// is measured is the watch, not the poll.
//
//	go test -run '^$' -bench DependencyRelease -benchtime 3x ./internal/controller/
func BenchmarkDependencyRelease(b *testing.B) {
	for b.Loop() {
		g := NewWithT(b)
		ns := tenantNamespace(b)
		secretDep := createResourceSet(b, ns, `
metadata:
  name: needs-secret
spec:
  dependsOn:
    - apiVersion: v1
      kind: Secret
      name: ready
      namespace: NAMESPACE
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: after-secret
        namespace: NAMESPACE
`)
		rsDep := createResourceSet(b, ns, `
metadata:
  name: needs-rset
spec:
  dependsOn:
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSet
      name: first
      namespace: NAMESPACE
      ready: true
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: after-rset
        namespace: NAMESPACE
`)
		g.Eventually(rsetCondition(secretDep, meta.ReadyCondition), timeout).Should(HavePrefix("False|DependencyNotReady|"))
		g.Eventually(rsetCondition(rsDep, meta.ReadyCondition), timeout).Should(HavePrefix("False|DependencyNotReady|"))

		start := time.Now()
		g.Expect(k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ready"}})).To(Succeed())
		waitReady(b, secretDep, "")
		b.ReportMetric(time.Since(start).Seconds(), "s-secret-release")

		// From the creation of the dependency: its own reconcile to Ready, then the release.
		start = time.Now()
		createResourceSet(b, ns, `
metadata:
  name: first
spec:
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: first
        namespace: NAMESPACE
`)
		waitReady(b, rsDep, "")
		b.ReportMetric(time.Since(start).Seconds(), "s-resourceset-release")
	}
}
