package controller

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// dependsOn as in docs/resourceset.md: a CRD that must be ready and a Secret gate whose readyExpr decodes
// its data. The ResourceSet waits (DependencyNotReady, saying which dependency and why) and
// applies once both hold; a ResourceSet depending on it follows as soon as it is ready.
func TestResourceSetDependsOn(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	crdName := "widgets." + ns + ".sluice.dev"
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  dependsOn:
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      name: `+crdName+`
      ready: true
    - apiVersion: v1
      kind: Secret
      name: my-gate
      namespace: NAMESPACE
      ready: true
      readyExpr: |
        string(base64.decode(data.gate)) == 'opened'
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app
        namespace: NAMESPACE
`)
	follower := createResourceSet(t, ns, `
metadata:
  name: follower
spec:
  dependsOn:
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSet
      name: app
      ready: true
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: follower
        namespace: NAMESPACE
`)
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(Equal(
		"False|DependencyNotReady|dependency 'apiextensions.k8s.io/v1/CustomResourceDefinition " + crdName + "' not found"))
	g.Eventually(rsetCondition(follower, meta.ReadyCondition), timeout).Should(HavePrefix("False|DependencyNotReady|"))

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: ns + ".sluice.dev", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList", Singular: "widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	g.Expect(k8s.Create(context.Background(), crd)).To(Succeed())
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(Equal(
		"False|DependencyNotReady|dependency 'v1/Secret " + ns + "/my-gate' not found"))

	gate := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-gate"}, Data: map[string][]byte{"gate": []byte("closed")}}
	g.Expect(k8s.Create(context.Background(), gate)).To(Succeed())
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(Equal(
		"False|DependencyNotReady|dependency 'v1/Secret " + ns + "/my-gate' readyExpr evaluated to false"))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app")).To(BeNil(), "nothing is applied while a dependency is unmet")

	gate.Data["gate"] = []byte("opened")
	g.Expect(k8s.Update(context.Background(), gate)).To(Succeed())
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app")).NotTo(BeNil())
	readyIn(t, follower)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "follower")).NotTo(BeNil())
}

// A readyExpr that does not compile, and a dependency of a kind the cluster does not serve, stall
// the ResourceSet with a message saying what to fix: nothing is applied, nothing is pruned.
func TestResourceSetDependsOnBadInput(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
metadata:
  name: app
spec:
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app
        namespace: NAMESPACE
`)
	readyIn(t, key)

	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Resources = nil // would prune the ConfigMap, were the spec applied
		rs.Spec.DependsOn = []rsv1.Dependency{{APIVersion: "v1", Kind: "Secret", Name: "gate", Ready: true, ReadyExpr: "data.gate == 'opened"}}
	})
	g.Eventually(rsetCondition(key, meta.StalledCondition), timeout).Should(And(
		HavePrefix("True|DependencyNotReady|readyExpr of dependency 'v1/Secret "+ns+"/gate': ERROR: <input>:1:"),
		ContainSubstring("Syntax error")))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app")).NotTo(BeNil())

	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.DependsOn = []rsv1.Dependency{{APIVersion: "nope.sluice.dev/v1", Kind: "Nope", Name: "x"}}
	})
	g.Eventually(rsetCondition(key, meta.StalledCondition), timeout).Should(And(
		HavePrefix("True|DependencyNotReady|"), ContainSubstring("kind Nope of apiVersion nope.sluice.dev/v1 is not served by the cluster")))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "app")).NotTo(BeNil())
	g.Expect(inventoryIDs(g, key)).To(ConsistOf(ns + "_app__ConfigMap@v1"))
}
