package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A garbage collection that fails is PruneFailed, as for a ManifestGeneration (one lifecycle):
// here the account may apply ConfigMaps but not delete them. The object stays, and the
// inventory still lists it, so the next attempt deletes it once the account may.
func TestResourceSetPruneFailed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	role := createDeployer(t, ns, "get", "list", "watch", "create", "update", "patch")

	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  serviceAccountName: deployer
  inputs:
    - name: one
    - name: two
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: << inputs.name >>
        namespace: NAMESPACE
`)
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "two")).NotTo(BeNil())

	rset := getResourceSet(g, key)
	rset.Spec.Inputs = rset.Spec.Inputs[:1]
	g.Expect(k8s.Update(ctx, rset)).To(Succeed())
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|PruneFailed|"), ContainSubstring(`cannot delete resource "configmaps"`)))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "two")).NotTo(BeNil())

	// Allowed to delete, the retry removes it.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(role), role)).To(Succeed())
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	g.Expect(k8s.Update(ctx, role)).To(Succeed())
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "two")).To(BeNil())
}
