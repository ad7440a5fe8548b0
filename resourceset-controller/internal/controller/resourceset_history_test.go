package controller

import (
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/sluice-gitops/sluice/shared/history"
	"github.com/sluice-gitops/sluice/shared/testenv"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// status.history, as flux-operator's: one snapshot per outcome (the applied revision and the
// Ready reason), counted and moved first when it repeats; a failed build is recorded by the
// digest of the spec; the 5 most recent are kept.
func TestResourceSetHistory(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: history
spec:
  inputs:
    - tenant: team-a
    - tenant: team-b
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.tenant >>
      namespace: NAMESPACE
`)
	readyIn(t, key)
	obj := getResourceSet(g, key)
	first := obj.Status.LastAppliedRevision
	g.Expect(obj.Status.History).To(HaveLen(1))
	h := obj.Status.History[0]
	g.Expect(h.Digest).To(Equal(first))
	g.Expect(h.LastReconciledStatus).To(Equal(meta.ReconciliationSucceededReason))
	g.Expect(h.TotalReconciliations).To(BeEquivalentTo(1))
	g.Expect(h.Metadata).To(Equal(map[string]string{"inputs": "2", "resources": "2"}))

	// The same outcome again: counted, not added.
	testenv.Poke(t, k8s, obj)
	readyIn(t, key)
	g.Eventually(func(g Gomega) int64 { return getResourceSet(g, key).Status.History[0].TotalReconciliations }, timeout).Should(BeEquivalentTo(2))
	g.Expect(getResourceSet(g, key).Status.History).To(HaveLen(1))

	// A build that fails is an outcome too, by the digest of the spec.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) { rs.Spec.ResourcesTemplate = "kind: [" })
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(HavePrefix("False|BuildFailed|"))
	g.Eventually(func(g Gomega) string { return getResourceSet(g, key).Status.History[0].LastReconciledStatus }, timeout).
		Should(Equal(meta.BuildFailedReason))
	obj = getResourceSet(g, key)
	g.Expect(obj.Status.History).To(HaveLen(2))
	g.Expect(obj.Status.History[0].Digest).To(HavePrefix("sha256:"))
	g.Expect(obj.Status.History[0].Digest).NotTo(Equal(first))
	g.Expect(obj.Status.History[1].Digest).To(Equal(first))

	// Five more outcomes: the five most recent are kept, newest first.
	template := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.tenant >>\n  namespace: " + ns + "\n"
	var revisions []string
	for i := range 5 {
		updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
			rs.Spec.ResourcesTemplate = template
			rs.Spec.Inputs = nil
			for j := range i + 1 {
				rs.Spec.Inputs = append(rs.Spec.Inputs, rsv1.ResourceSetInput{"tenant": &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", fmt.Sprintf("t%d", j)))}})
			}
		})
		readyIn(t, key)
		revisions = append([]string{getResourceSet(g, key).Status.LastAppliedRevision}, revisions...)
	}
	snapshots := getResourceSet(g, key).Status.History
	g.Expect(snapshots).To(HaveLen(history.MaxHistory))
	var digests []string
	for _, s := range snapshots {
		digests = append(digests, s.Digest)
	}
	g.Expect(digests).To(Equal(revisions))
	g.Expect(snapshots[0].Metadata).To(Equal(map[string]string{"inputs": "5", "resources": "5"}))
}
