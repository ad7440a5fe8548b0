package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// checksumFrom, as flux-operator's: the digest of the named ConfigMaps' and Secrets' data is
// written beside it, on the pod template, so the Deployment rolls when they change: a Secret of
// the cluster (watched: no reconcile request needed, it is in status.externalChecksumRefs) and
// a ConfigMap the ResourceSet generates itself. An entry that does not parse stalls.
func TestResourceSetChecksumFromRollsTheDeployment(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenantNamespace(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-secret"}, Data: map[string][]byte{"token": []byte("one")}}
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: app
spec:
  inputs:
    - level: info
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-config
    data:
      level: << inputs.level >>
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: app
    spec:
      replicas: 0
      selector:
        matchLabels: {app: app}
      template:
        metadata:
          labels: {app: app}
          annotations:
            fluxcd.controlplane.io/checksumFrom: |
              ConfigMap/NAMESPACE/app-config,
              Secret/NAMESPACE/app-secret
        spec:
          containers:
            - name: app
              image: registry.invalid/app:1
`)
	readyIn(t, key)
	checksum := func(g Gomega) string {
		d := getObject(g, "apps/v1", "Deployment", ns, "app")
		g.Expect(d).NotTo(BeNil())
		v, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", rsv1.ChecksumAnnotation)
		return v
	}
	first := checksum(g)
	g.Expect(first).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(getResourceSet(g, key).Status.ExternalChecksumRefs).To(Equal([]string{"Secret/" + ns + "/app-secret"}))

	// The Secret changes: the watch reconciles the ResourceSet, the template rolls.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Data["token"] = []byte("two")
	g.Expect(k8s.Update(ctx, secret)).To(Succeed())
	g.Eventually(checksum, timeout).ShouldNot(Equal(first))
	second := checksum(g)

	// The generated ConfigMap changes: so does the checksum, in the same apply.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { rs.Spec.Inputs[0]["level"].Raw = []byte(`"debug"`) })
	readyIn(t, key)
	g.Expect(checksum(g)).NotTo(Equal(second))
	g.Expect(checksum(g)).NotTo(Equal(first))

	// An entry that does not parse: no retry helps.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.ResourcesTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    fluxcd.controlplane.io/checksumFrom: Deployment/a/b\n"
	})
	g.Eventually(rsetCondition(key, meta.StalledCondition), timeout).Should(Equal("True|BuildFailed|build failed: ConfigMap//x: invalid " +
		"fluxcd.controlplane.io/checksumFrom entry \"Deployment/a/b\": write ConfigMap/<namespace>/<name> or Secret/<namespace>/<name>"))
}
