package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The tenant RBAC example of docs/resourceset.md: a Namespace, a ServiceAccount and a RoleBinding per tenant,
// applied in stages (the Namespaces first, so the namespaced objects can go in them).
func TestResourceSetExampleTenantRBAC(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, exampleManifest(t, "example-tenant-rbac"))
	readyIn(t, key)
	for tenant, role := range map[string]string{ns + "-team1": "admin", ns + "-team2": "cluster-admin"} {
		g.Expect(getObject(g, "v1", "Namespace", "", tenant)).NotTo(BeNil())
		g.Expect(getObject(g, "v1", "ServiceAccount", tenant, "flux")).NotTo(BeNil())
		rb := &rbacv1.RoleBinding{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: tenant, Name: "flux"}, rb)).To(Succeed())
		g.Expect(rb.RoleRef.Name).To(Equal(role))
		g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "flux", Namespace: tenant}))
	}
	g.Expect(inventoryIDs(g, key)).To(ContainElements("_"+ns+"-team1__Namespace@v1", ns+"-team1_flux__ServiceAccount@v1",
		ns+"-team1_flux_rbac.authorization.k8s.io_RoleBinding@v1"))
}

// The shared source of docs/resourceset.md: one OCIRepository for every tenant (deduplicated), a HelmRelease
// each.
func TestResourceSetSharedSource(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, exampleManifest(t, "example-shared-source"))
	readyIn(t, key)
	g.Expect(inventoryIDs(g, key)).To(ConsistOf(
		ns+"_podinfo_source.toolkit.fluxcd.io_OCIRepository@v1beta2",
		ns+"_podinfo-team1_helm.toolkit.fluxcd.io_HelmRelease@v2",
		ns+"_podinfo-team2_helm.toolkit.fluxcd.io_HelmRelease@v2",
	))
	hr := getObject(g, "helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, "podinfo-team2")
	g.Expect(hr.Object["spec"]).To(HaveKeyWithValue("values", map[string]any{"replicaCount": int64(3)}))
}

// The conditional exclusion of docs/resourceset.md: the ServiceAccount is generated for team1 only.
func TestResourceSetExampleConditionalExclusion(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, exampleManifest(t, "example-conditional-exclusion"))
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ServiceAccount", ns, "flux-team1")).NotTo(BeNil())
	g.Expect(getObject(g, "v1", "ServiceAccount", ns, "flux-team2")).To(BeNil())
	g.Expect(inventoryIDs(g, key)).To(HaveLen(3))
}

// The resourcesTemplate of docs/resourceset.md, with range and if: an OCIRepository per bundle and a
// Kustomization per component, with decryption only where the bundle asks for it; and
// spec.resources winning over resourcesTemplate for the same object.
func TestResourceSetExampleResourcesTemplate(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, exampleManifest(t, "example-resources-template"))
	readyIn(t, key)
	g.Expect(inventoryIDs(g, key)).To(HaveLen(6))
	for _, c := range []string{"ingress-nginx", "cert-manager", "frontend", "backend"} {
		k := getObject(g, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", ns, c)
		g.Expect(k).NotTo(BeNil(), c)
		_, hasDecryption := k.Object["spec"].(map[string]any)["decryption"]
		g.Expect(hasDecryption).To(Equal(c == "frontend" || c == "backend"), c)
	}
	apps := getObject(g, "source.toolkit.fluxcd.io/v1beta2", "OCIRepository", ns, "apps")
	g.Expect(apps.Object["spec"]).To(HaveKeyWithValue("url", "oci://registry.example.com/from-resources"), "spec.resources wins")
	addons := getObject(g, "source.toolkit.fluxcd.io/v1beta2", "OCIRepository", ns, "addons")
	g.Expect(addons.Object["spec"]).To(HaveKeyWithValue("url", "oci://registry.example.com/addons"))
}

// exampleManifest is a ResourceSet example of docs/resourceset.md kept in testdata/<name>.yaml:
// its metadata and spec, with NAMESPACE for the test's namespace.
func exampleManifest(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
