package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// An oci HelmRepository whose provider needs a cloud identity stalls and says why; Flux's
// accessFrom is accepted as it is.
func TestHelmRepositoryCloudProviderStalls(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	key := createHelmRepo(t, ns, "gcp", sourcev1.HelmRepositorySpec{
		URL: "oci://europe-docker.pkg.dev/project/charts", Type: sourcev1.HelmRepositoryTypeOCI, Provider: "gcp",
		AccessFrom: &sourcev1.AccessFrom{NamespaceSelectors: []sourcev1.NamespaceSelector{{MatchLabels: map[string]string{"team": "a"}}}},
	})
	g.Eventually(func(g Gomega) bool { return conditions.IsStalled(getHelmRepo(g, key)) }, timeout).Should(BeTrue())
	obj := getHelmRepo(g, key)
	g.Expect(conditions.GetReason(obj, meta.ReadyCondition)).To(Equal(sourcev1.AuthenticationFailedReason))
	g.Expect(conditions.GetMessage(obj, meta.ReadyCondition)).To(HavePrefix("provider 'gcp' needs a cloud identity"))
	g.Expect(obj.Spec.AccessFrom.NamespaceSelectors[0].MatchLabels).To(HaveKeyWithValue("team", "a"))
}
