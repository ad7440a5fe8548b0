package controller

import (
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-gitops/sluice/shared/testenv"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// spec.maxPrune stops a mass deletion: a prune within the limit goes through; one beyond it
// applies and prunes nothing, says so with the revision to allow; the allow-prune annotation
// naming that revision lets exactly that one through, and is then used up.
func TestResourceSetMaxPruneStopsAMassDeletion(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: fleet
spec:
  maxPrune: 1
  inputs:
    - tenant: t0
    - tenant: t1
    - tenant: t2
    - tenant: t3
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.tenant >>
`)
	readyIn(t, key)
	tenants := func(names ...string) func(*rsv1.ResourceSet) {
		return func(rs *rsv1.ResourceSet) {
			rs.Spec.Inputs = nil
			for _, n := range names {
				rs.Spec.Inputs = append(rs.Spec.Inputs, rsv1.ResourceSetInput{"tenant": &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", n))}})
			}
		}
	}
	configMaps := func(g Gomega) []string {
		var out []string
		for _, n := range []string{"t0", "t1", "t2", "t3"} {
			if getObject(g, "v1", "ConfigMap", ns, n) != nil {
				out = append(out, n)
			}
		}
		return out
	}

	// One deletion: within the limit.
	updateResourceSet(t, key, tenants("t0", "t1", "t2"))
	readyIn(t, key)
	g.Eventually(configMaps, timeout).Should(Equal([]string{"t0", "t1", "t2"}))

	// Two deletions: stopped, nothing applied or pruned.
	updateResourceSet(t, key, tenants("t0"))
	var revision string
	g.Eventually(func(g Gomega) string {
		c := rsetCondition(key, meta.ReadyCondition)(g)
		_, _ = fmt.Sscanf(c, "False|PruneLimitExceeded|revision %s would", &revision)
		return c
	}, timeout).Should(HavePrefix("False|PruneLimitExceeded|revision sha256:"))
	g.Expect(rsetCondition(key, meta.ReadyCondition)(g)).To(Equal("False|PruneLimitExceeded|revision " + revision +
		" would delete 2 of the 3 objects applied, more than spec.maxPrune 1 allows (1): nothing is applied or pruned; " +
		"raise spec.maxPrune, or annotate the ResourceSet with resourceset.fluxcd.controlplane.io/allow-prune=" + revision +
		" to let this one prune through"))
	g.Consistently(configMaps, "2s").Should(Equal([]string{"t0", "t1", "t2"}))

	// Allowed once, by its revision: pruned, and the annotation is used up.
	testenv.Annotate(t, k8s, getResourceSet(g, key), rsv1.AllowPruneAnnotation, revision)
	g.Eventually(configMaps, timeout).Should(Equal([]string{"t0"}))
	readyIn(t, key)
	g.Eventually(func(g Gomega) map[string]string { return getResourceSet(g, key).Annotations }, timeout).
		ShouldNot(HaveKey(rsv1.AllowPruneAnnotation))

	// A percentage: 50% of 3 objects is 1.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		tenants("t0", "t1", "t2")(rs)
		pct := intstr.FromString("50%")
		rs.Spec.MaxPrune = &pct
	})
	readyIn(t, key)
	updateResourceSet(t, key, tenants("t0"))
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(ContainSubstring("would delete 2 of the 3 objects applied, more than spec.maxPrune 50% allows (1)"))
	g.Expect(configMaps(g)).To(Equal([]string{"t0", "t1", "t2"}))
}
