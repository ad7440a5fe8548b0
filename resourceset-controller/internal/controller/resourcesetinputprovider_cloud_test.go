package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// flux-operator's provider types that authenticate with a cloud's workload identity apply
// unchanged (a flux-operator manifest is accepted), and are refused with a message that says
// why: Ready=False and Stalled, nothing exported.
func TestInputProviderCloudIdentityIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	for _, typ := range rsv1.CloudIdentityProviders {
		obj := rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: %s
spec:
  type: %s
  url: https://example.com/org/repo
`, strings.ToLower(typ), typ))
		key := client.ObjectKeyFromObject(obj)
		g.Eventually(rsipCondition(key, meta.StalledCondition), timeout).Should(Equal("True|ReconciliationFailed|provider type "+typ+
			" needs cloud identity (the workload identity of Azure, AWS or Google Cloud), which Sluice does not have: "+
			"list the repository with GitBranch or GitTag and a token, or the registry with OCIArtifactTag"), typ)
		g.Expect(rsipGet(g, key).Status.ExportedInputs).To(BeEmpty())
	}
}
