package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// With spec.isolateInputFailures, an input whose template fails is left out and named in
// status.failedInputs while the others apply; the objects it applied before stay, and nothing is
// pruned (an input removed meanwhile keeps its object) until every input renders again.
func TestResourceSetIsolatesAFailingInput(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: isolated
spec:
  isolateInputFailures: true
  inputs:
    - name: a
      val: "1"
    - name: b
      val: "1"
    - name: c
      val: "1"
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-<< inputs.name >>
      namespace: NAMESPACE
    data:
      val: << inputs.val | quote >>
`)
	readyIn(t, key)
	val := func(name string) func(g Gomega) any {
		return func(g Gomega) any {
			obj := getObject(g, "v1", "ConfigMap", ns, name)
			if obj == nil {
				return nil
			}
			return obj.Object["data"].(map[string]any)["val"]
		}
	}

	// b loses its value (its template fails), a changes, c leaves the inputs.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Inputs = rs.Spec.Inputs[:2]
		rs.Spec.Inputs[0]["val"] = &apiextensionsv1.JSON{Raw: []byte(`"2"`)}
		delete(rs.Spec.Inputs[1], "val")
	})
	g.Eventually(val("app-a"), timeout).Should(Equal("2"))
	g.Eventually(func(g Gomega) []rsv1.FailedInput { return getResourceSet(g, key).Status.FailedInputs }, timeout).Should(
		ConsistOf(HaveField("Message", And(HavePrefix("inputs[1]: "), ContainSubstring(`map has no entry for key "val"`)))))
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(HavePrefix("True|ReconciliationSucceeded|Reconciliation finished in "),
		ContainSubstring("; 1 of the inputs failed and were left out, their objects kept, nothing pruned (status.failedInputs): inputs[1]: ")))
	g.Expect(val("app-b")(g)).To(Equal("1"), "the failed input's object stays as it was")
	g.Expect(val("app-c")(g)).To(Equal("1"), "nothing is pruned while an input fails")
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix("Warning InputFailed: input left out, its objects kept: inputs[1]: ")))

	// b renders again: everything applies, and c's object goes.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { rs.Spec.Inputs[1]["val"] = &apiextensionsv1.JSON{Raw: []byte(`"3"`)} })
	g.Eventually(val("app-b"), timeout).Should(Equal("3"))
	g.Eventually(val("app-c"), timeout).Should(BeNil())
	// The status is written once the prune is done.
	g.Eventually(func(g Gomega) []rsv1.FailedInput { return getResourceSet(g, key).Status.FailedInputs }, timeout).Should(BeEmpty())
}

// An input whose object the API server refuses is left out too, with the API server's words, and
// the other inputs apply.
func TestResourceSetIsolatesAnInputTheAPIServerRefuses(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: refused
spec:
  isolateInputFailures: true
  inputs:
    - name: a
      port: "80"
    - name: b
      port: "80"
  resourcesTemplate: |
    apiVersion: v1
    kind: Service
    metadata:
      name: svc-<< inputs.name >>
      namespace: NAMESPACE
    spec:
      ports:
        - port: << inputs.port >>
`)
	readyIn(t, key)
	port := func(name string) func(g Gomega) any {
		return func(g Gomega) any {
			obj := getObject(g, "v1", "Service", ns, name)
			if obj == nil {
				return nil
			}
			ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
			return ports[0].(map[string]any)["port"]
		}
	}

	// b asks for a port the API server refuses; a changes.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Inputs[0]["port"] = &apiextensionsv1.JSON{Raw: []byte(`"81"`)}
		rs.Spec.Inputs[1]["port"] = &apiextensionsv1.JSON{Raw: []byte(`"99999"`)}
	})
	g.Eventually(port("svc-a"), timeout).Should(BeEquivalentTo(81))
	g.Eventually(func(g Gomega) []rsv1.FailedInput { return getResourceSet(g, key).Status.FailedInputs }, timeout).Should(
		ConsistOf(HaveField("Message", And(HavePrefix("inputs[1]: Service/"+ns+"/svc-b "), ContainSubstring("99999")))))
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|ReconciliationSucceeded|"))
	g.Expect(port("svc-b")(g)).To(BeEquivalentTo(80), "the refused input's object stays as it was")
}
