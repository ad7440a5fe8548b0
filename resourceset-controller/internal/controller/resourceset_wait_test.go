package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// spec.wait: the ResourceSet is ready only when the applied objects are (kstatus). A
// Deployment that does not roll out within reconcileTimeout fails the health check; once its
// status says it is available, the ResourceSet is ready.
func TestResourceSetWaitsForHealth(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
metadata:
  name: app
  annotations:
    fluxcd.controlplane.io/reconcileTimeout: "3s"
spec:
  wait: true
  resources:
    - apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: app
        namespace: NAMESPACE
      spec:
        replicas: 1
        selector:
          matchLabels: {app: app}
        template:
          metadata:
            labels: {app: app}
          spec:
            containers:
              - name: app
                image: registry.example.com/app:1.0.0
`)
	// Ready and Reconciling of one reading: the retry that follows marks both Progressing.
	g.Eventually(func(g Gomega) string {
		return rsetCondition(key, meta.ReadyCondition)(g) + "\n" + rsetCondition(key, meta.ReconcilingCondition)(g)
	}, timeout).Should(And(
		HavePrefix("False|HealthCheckFailed|health check failed after "), ContainSubstring("Deployment/"+ns+"/app"),
		ContainSubstring("\nTrue|ProgressingWithRetry|")))

	// The Deployment rolls out (no kube-controller-manager here: its status is written as it would).
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app"}, d)).To(Succeed())
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
	g.Expect(k8s.Status().Update(t.Context(), d)).To(Succeed())
	poke(t, &rsv1.ResourceSet{ObjectMeta: metaOf(key)})
	readyIn(t, key)
}
