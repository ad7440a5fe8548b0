package controller

import (
	"testing"

	. "github.com/onsi/gomega"
)

const unready = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
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
`

// spec.wait: objects that do not become ready within the timeout are HealthCheckFailed, the
// message says after how long (as for a ResourceSet: one lifecycle), and the revision counts as
// applied. No kube-controller-manager runs here, so the Deployment never becomes ready. The wait
// ends at spec.timeout, not at the end of the reconcile's longer deadline.
func TestManifestGenerationHealthCheckFailed(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	publish(t, ns, "repo", "main@sha1:f001", map[string]string{"staging/app.yaml": unready})
	key := createGeneration(t, ns, generation+"  wait: true\n  timeout: 3s\n")
	g.Eventually(readyCondition(key), timeout).Should(And(
		HavePrefix("False|HealthCheckFailed|health check failed after "), ContainSubstring("Deployment/"+ns+"/app")))
	g.Expect(getGeneration(g, key).Status.LastAppliedRevision).To(Equal("main@sha1:f001"))
}
