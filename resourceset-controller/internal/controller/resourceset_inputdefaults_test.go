package controller

import (
	"testing"

	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// spec.inputDefaults on the real API server: a tenant that sets no storage gets the default,
// and changing the default changes only the objects that use it.
func TestResourceSetInputDefaults(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: s3-tenants
spec:
  inputDefaults:
    storage: 100Gi
  inputs:
  - tenant: acme
    storage: 10Gi
  - tenant: utvt
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: s3-<< inputs.tenant >>
    data:
      storage: << inputs.storage >>
`)
	readyIn(t, key)
	storage := func(g Gomega, tenant string) any {
		return getObject(g, "v1", "ConfigMap", ns, "s3-"+tenant).Object["data"].(map[string]any)["storage"]
	}
	g.Expect(storage(g, "acme")).To(Equal("10Gi"))
	g.Expect(storage(g, "utvt")).To(Equal("100Gi"))

	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.InputDefaults["storage"].Raw = []byte(`"200Gi"`)
	})
	g.Eventually(func(g Gomega) any { return storage(g, "utvt") }, timeout).Should(Equal("200Gi"))
	g.Expect(storage(g, "acme")).To(Equal("10Gi"))
}
