package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// releasesProvider is a ready provider of the tags 1.0.0 and 1.1.0 of an OCI repository.
func releasesProvider(t *testing.T, ns string) *rsv1.ResourceSetInputProvider {
	t.Helper()
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	for _, tag := range []string{"1.0.0", "1.1.0"} {
		registry.PushArtifact(t, "apps/web:"+tag, map[string]string{"a": tag}, nil)
	}
	provider := rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: releases
spec:
  type: OCIArtifactTag
  url: oci://%s/apps/web
  insecure: true
  filter:
    semver: ">=1.0.0"
`, registry.Host()))
	rsipReady(t, client.ObjectKeyFromObject(provider))
	return provider
}

// A provider that suddenly exports nothing (here a filter that matches no tag any more) prunes
// nothing when its reference sets minInputs: Ready=False, InputsGuarded, naming the provider and
// the counts, and the objects applied last stay. Lowering the guard lets the prune through.
func TestResourceSetMinInputsGuardsAgainstAnEmptiedProvider(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	provider := releasesProvider(t, ns)

	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: guarded
spec:
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: releases
      minInputs: 1
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-<< inputs.tag | replace "." "-" >>
      namespace: NAMESPACE
`)
	readyIn(t, key)
	revision := getResourceSet(g, key).Status.LastAppliedRevision
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "web-1-0-0")).NotTo(BeNil())
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "web-1-1-0")).NotTo(BeNil())

	// The filter goes wrong: the provider is healthy and exports nothing.
	rsipUpdate(t, client.ObjectKeyFromObject(provider), func(p *rsv1.ResourceSetInputProvider) { p.Spec.Filter.SemVer = ">=9.0.0" })
	g.Eventually(func(g Gomega) int { return len(rsipGet(g, client.ObjectKeyFromObject(provider)).Status.ExportedInputs) }, timeout).Should(BeZero())
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(Equal(
		"False|InputsGuarded|input provider '" + ns + "/releases' exports 0 inputs, fewer than the minInputs 1 of inputsFrom[0]: " +
			"nothing is applied or pruned, the objects of revision " + revision + " stay"))
	g.Consistently(func(g Gomega) bool {
		return getObject(g, "v1", "ConfigMap", ns, "web-1-0-0") != nil && getObject(g, "v1", "ConfigMap", ns, "web-1-1-0") != nil
	}, "3s").Should(BeTrue(), "nothing is pruned")
	g.Expect(inventoryIDs(g, key)).To(HaveLen(2))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix("Normal InputsGuarded: input provider '" + ns + "/releases' exports 0 inputs")))

	// The person who meant it removes the guard: the prune goes through.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { rs.Spec.InputsFrom[0].MinInputs = nil })
	readyIn(t, key)
	g.Eventually(func(g Gomega) bool {
		return getObject(g, "v1", "ConfigMap", ns, "web-1-0-0") == nil && getObject(g, "v1", "ConfigMap", ns, "web-1-1-0") == nil
	}, timeout).Should(BeTrue())
}

// With spec.deletionApproval, a tripped minInputs does not stop the ResourceSet cold: what the
// remaining inputs would delete is put to the gate's approvers as a deletion set, and nothing is
// applied or pruned meanwhile.
func TestResourceSetMinInputsPutsTheDeletionToAGate(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	provider := releasesProvider(t, ns)
	gate := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gating.toolkit.fluxcd.io/v1alpha1", "kind": "Gate",
		"metadata": map[string]any{"namespace": ns, "name": "deletions"},
		"spec": map[string]any{"default": "closed", "approval": map[string]any{
			"rules": []any{map[string]any{"name": "sre", "approvers": map[string]any{"users": []any{"ana"}}}}}},
	}}
	g.Expect(k8s.Create(context.Background(), gate)).To(Succeed())

	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: guarded
spec:
  deletionApproval:
    gate: deletions
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: releases
      minInputs: 2
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-<< inputs.tag | replace "." "-" >>
      namespace: NAMESPACE
`)
	readyIn(t, key)

	rsipUpdate(t, client.ObjectKeyFromObject(provider), func(p *rsv1.ResourceSetInputProvider) { p.Spec.Filter.SemVer = ">=1.1.0" })
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|DeletionPending|input provider '"+ns+"/releases' exports 1 inputs, fewer than the minInputs 2 of inputsFrom[0]: "+
			"the deletion of 1 object (sha256:"),
		HaveSuffix("waits for approval on gate 'deletions' (waiting for approval); nothing is applied or pruned until then")))
	set := getResourceSet(g, key).Status.PendingDeletion
	g.Expect(set).NotTo(BeNil())
	g.Expect(set.Objects).To(Equal([]string{ns + "_web-1-0-0__ConfigMap"}))
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(gate), gate)).To(Succeed())
	g.Expect(gate.GetAnnotations()).To(And(HaveKeyWithValue("open.gate.fluxcd.io/revision", set.Digest),
		HaveKeyWithValue("open.gate.fluxcd.io/reason", "ResourceSet "+ns+"/guarded would delete 1 object: "+ns+"_web-1-0-0__ConfigMap"),
		HaveKey("open.gate.fluxcd.io/requestedAt"), HaveKey("open.gate.fluxcd.io/requestedBy")))
	g.Consistently(func(g Gomega) bool { return getObject(g, "v1", "ConfigMap", ns, "web-1-0-0") != nil }, "2s").Should(BeTrue())
}
