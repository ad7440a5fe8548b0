package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Garbage collection in stages (docs/resourceset.md): the Flux objects go first, and the ServiceAccount an
// applier (a Flux Kustomization, a ManifestGeneration) impersonates stays until the applier is
// finalized (here the test plays its controller and removes its finalizer). An object annotated
// prune: disabled is left alone.
func TestResourceSetStagedGarbageCollection(t *testing.T) {
	for _, applier := range []struct{ apiVersion, kind, spec string }{
		{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "serviceAccountName: flux"},
		{"generator.toolkit.fluxcd.io/v1alpha1", "ManifestGeneration",
			"serviceAccountName: flux\n        sourceRef: {kind: GitRepository, name: apps}\n        interval: 5m"},
	} {
		t.Run(applier.kind, func(t *testing.T) {
			g := NewWithT(t)
			ns := tenantNamespace(t)
			key := createResourceSet(t, ns, fmt.Sprintf(`
metadata:
  name: tenant
spec:
  resources:
    - apiVersion: v1
      kind: ServiceAccount
      metadata:
        name: flux
        namespace: NAMESPACE
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: keep
        namespace: NAMESPACE
        annotations:
          fluxcd.controlplane.io/prune: disabled
    - apiVersion: %s
      kind: %s
      metadata:
        name: apps
        namespace: NAMESPACE
        finalizers: [finalizers.fluxcd.io]
      spec:
        %s
`, applier.apiVersion, applier.kind, applier.spec))
			readyIn(t, key)

			g.Expect(k8s.Delete(context.Background(), &rsv1.ResourceSet{ObjectMeta: metaOf(key)})).To(Succeed())
			// The applier is being deleted (its finalizer holds it), the ServiceAccount waits.
			g.Eventually(func(g Gomega) bool {
				k := getObject(g, applier.apiVersion, applier.kind, ns, "apps")
				return k != nil && k.GetDeletionTimestamp() != nil
			}, timeout).Should(BeTrue())
			g.Consistently(func(g Gomega) any { return getObject(g, "v1", "ServiceAccount", ns, "flux") }, 2*time.Second).ShouldNot(BeNil())

			k := getObject(g, applier.apiVersion, applier.kind, ns, "apps")
			k.SetFinalizers(nil)
			g.Expect(k8s.Update(context.Background(), k)).To(Succeed())
			g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ServiceAccount", ns, "flux") }, timeout).Should(BeNil())
			g.Eventually(func() error { return k8s.Get(context.Background(), key, &rsv1.ResourceSet{}) }, timeout).ShouldNot(Succeed())
			g.Expect(getObject(g, "v1", "ConfigMap", ns, "keep")).NotTo(BeNil(), "prune: disabled")
			g.Eventually(eventsOf(key), timeout).Should(ContainElement(MatchRegexp(
				`^Normal GarbageCollectionSucceeded: ` + applier.kind + `/` + ns + `/apps deleted\nServiceAccount/` + ns + `/flux deleted\nGarbage collection finished in [0-9.]+s$`)))
		})
	}
}
