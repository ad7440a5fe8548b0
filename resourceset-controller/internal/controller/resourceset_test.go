package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// The first example of docs/resourceset.md: an OCIRepository and a HelmRelease per tenant, with the tenant's
// version (a quoted string) and replicas (an int), the common label, an inventory in docs/resourceset.md's
// format and an ApplySucceeded event listing what was created. Removing a tenant prunes its
// objects; deleting the ResourceSet removes the rest.
func TestResourceSetExamplePodinfoTenants(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, exampleManifest(t, "example-podinfo-tenants"))
	readyIn(t, key)
	for tenant, replicas := range map[string]int64{"team1": 2, "team2": 3} {
		hr := getObject(g, "helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, "podinfo-"+tenant)
		g.Expect(hr).NotTo(BeNil())
		g.Expect(hr.Object["spec"]).To(HaveKeyWithValue("values", map[string]any{"replicaCount": replicas}))
		g.Expect(hr.GetLabels()).To(And(HaveKeyWithValue("app.kubernetes.io/name", "podinfo"),
			HaveKeyWithValue("resourceset.fluxcd.controlplane.io/name", "podinfo"),
			HaveKeyWithValue("resourceset.fluxcd.controlplane.io/namespace", ns)))
		repo := getObject(g, "source.toolkit.fluxcd.io/v1beta2", "OCIRepository", ns, "podinfo-"+tenant)
		g.Expect(repo).NotTo(BeNil())
	}
	repo := getObject(g, "source.toolkit.fluxcd.io/v1", "OCIRepository", ns, "podinfo-team1")
	g.Expect(repo.Object["spec"]).To(HaveKeyWithValue("ref", map[string]any{"semver": "6.7.x"}))

	g.Expect(inventoryIDs(g, key)).To(ConsistOf(
		ns+"_podinfo-team1_helm.toolkit.fluxcd.io_HelmRelease@v2",
		ns+"_podinfo-team2_helm.toolkit.fluxcd.io_HelmRelease@v2",
		ns+"_podinfo-team1_source.toolkit.fluxcd.io_OCIRepository@v1beta2",
		ns+"_podinfo-team2_source.toolkit.fluxcd.io_OCIRepository@v1beta2",
	))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(
		"Normal ApplySucceeded: HelmRelease/" + ns + "/podinfo-team1 created\nHelmRelease/" + ns + "/podinfo-team2 created\n" +
			"OCIRepository/" + ns + "/podinfo-team1 created\nOCIRepository/" + ns + "/podinfo-team2 created"))
	g.Expect(eventsOf(key)(g)).To(ContainElement(MatchRegexp(`^Normal ReconciliationSucceeded: Reconciliation finished in`)))

	// team2 leaves: its objects are garbage collected, the event says which and how long it took.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { rs.Spec.Inputs = rs.Spec.Inputs[:1] })
	g.Eventually(func(g Gomega) bool {
		return getObject(g, "helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, "podinfo-team2") == nil &&
			getObject(g, "source.toolkit.fluxcd.io/v1", "OCIRepository", ns, "podinfo-team2") == nil
	}, timeout).Should(BeTrue())
	readyIn(t, key)
	g.Expect(inventoryIDs(g, key)).To(HaveLen(2))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(MatchRegexp(
		`^Normal GarbageCollectionSucceeded: HelmRelease/` + ns + `/podinfo-team2 deleted\nOCIRepository/` + ns + `/podinfo-team2 deleted\nGarbage collection finished in`)))
	g.Expect(getObject(g, "helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, "podinfo-team1")).NotTo(BeNil())

	// Deleting the ResourceSet removes what it created.
	g.Expect(k8s.Delete(context.Background(), &rsv1.ResourceSet{ObjectMeta: metaOf(key)})).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		return getObject(g, "helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, "podinfo-team1") == nil &&
			getObject(g, "source.toolkit.fluxcd.io/v1", "OCIRepository", ns, "podinfo-team1") == nil &&
			k8s.Get(context.Background(), key, &rsv1.ResourceSet{}) != nil
	}, timeout).Should(BeTrue())
}

func metaOf(key client.ObjectKey) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
}

// A namespaced object without metadata.namespace goes in the ResourceSet's namespace.
func TestResourceSetDefaultsNamespaces(t *testing.T) {
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
        name: settings
`)
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "settings")).NotTo(BeNil())
	g.Expect(inventoryIDs(g, key)).To(ConsistOf(ns + "_settings__ConfigMap@v1"))
}
