package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// Garbage collection in stages (seed 001): the Flux objects go first, and the ServiceAccount the
// Flux Kustomization impersonates stays until the Kustomization is finalized (here the test
// plays kustomize-controller and removes its finalizer). An object annotated prune: disabled
// is left alone.
func TestResourceSetStagedGarbageCollection(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	key := createResourceSet(t, ns, `
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
    - apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: apps
        namespace: NAMESPACE
        finalizers: [finalizers.fluxcd.io]
      spec:
        serviceAccountName: flux
`)
	readyIn(t, key)

	g.Expect(k8s.Delete(context.Background(), &rsv1.ResourceSet{ObjectMeta: metaOf(key)})).To(Succeed())
	// The Kustomization is being deleted (its finalizer holds it), the ServiceAccount waits.
	g.Eventually(func(g Gomega) bool {
		k := getObject(g, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", ns, "apps")
		return k != nil && k.GetDeletionTimestamp() != nil
	}, timeout).Should(BeTrue())
	g.Consistently(func(g Gomega) any { return getObject(g, "v1", "ServiceAccount", ns, "flux") }, 2*time.Second).ShouldNot(BeNil())

	k := getObject(g, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", ns, "apps")
	k.SetFinalizers(nil)
	g.Expect(k8s.Update(context.Background(), k)).To(Succeed())
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ServiceAccount", ns, "flux") }, timeout).Should(BeNil())
	g.Eventually(func() error { return k8s.Get(context.Background(), key, &rsv1.ResourceSet{}) }, timeout).ShouldNot(Succeed())
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "keep")).NotTo(BeNil(), "prune: disabled")
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(MatchRegexp(
		`^Normal GarbageCollectionSucceeded: Kustomization/` + ns + `/apps deleted\nServiceAccount/` + ns + `/flux deleted\nGarbage collection finished in [0-9.]+s$`)))
}
