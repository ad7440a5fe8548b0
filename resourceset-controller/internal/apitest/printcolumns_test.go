package apitest

import (
	"context"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// The served CRDs carry the short names and the AGE GATES READY STATUS columns of the documentation,
// and the replica of each object with -o wide (SHARD, with --sharding).
func TestServedCRDs(t *testing.T) {
	age := apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}
	gates := apiextensionsv1.CustomResourceColumnDefinition{Name: "Gates", Type: "string", JSONPath: ".status.gates.state"}
	ready := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
		{Name: "Status", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].message`},
	}
	shard := apiextensionsv1.CustomResourceColumnDefinition{Name: "Shard", Type: "string", Priority: 1,
		JSONPath: `.metadata.labels.sharding\.sluice\.dev/shard`}
	columns := append(append([]apiextensionsv1.CustomResourceColumnDefinition{age, gates}, ready...), shard)
	for _, tc := range []struct {
		crd, shortName string
		columns        []apiextensionsv1.CustomResourceColumnDefinition
	}{
		{"resourcesets.fluxcd.controlplane.io", "rset", columns},
		{"resourcesetinputproviders.fluxcd.controlplane.io", "rsip", columns},
	} {
		t.Run(tc.crd, func(t *testing.T) {
			g := NewWithT(t)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: tc.crd}, crd)).To(Succeed())
			g.Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))
			g.Expect(crd.Spec.Names.ShortNames).To(ConsistOf(tc.shortName))
			g.Expect(crd.Spec.Versions).To(HaveLen(1))
			v := crd.Spec.Versions[0]
			g.Expect(v.Name).To(Equal("v1"))
			g.Expect(v.Subresources.Status).NotTo(BeNil())
			g.Expect(v.AdditionalPrinterColumns).To(Equal(tc.columns))
		})
	}
}

// `kubectl get resourceset` prints NAME AGE GATES READY STATUS with the Ready condition, as documented.
func TestKubectlGetColumns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	rset := &rsv1.ResourceSet{}
	rset.Namespace, rset.Name = ns, "podinfo"
	g.Expect(env.Client.Create(ctx, rset)).To(Succeed())
	rset.SetConditions([]metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: rsv1.ReconciliationSucceededReason,
		Message: "Reconciliation finished in 52s", LastTransitionTime: metav1.Now(), ObservedGeneration: rset.Generation}})
	g.Expect(env.Client.Status().Update(ctx, rset)).To(Succeed())

	rsip := &rsv1.ResourceSetInputProvider{Spec: rsv1.ResourceSetInputProviderSpec{Type: rsv1.InputProviderStatic}}
	rsip.Namespace, rsip.Name = ns, "tenants"
	g.Expect(env.Client.Create(ctx, rsip)).To(Succeed())

	out, err := kubectl(t, "", "get", "resourceset", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`^NAME +AGE +GATES +READY +STATUS\n`))
	g.Expect(out).To(MatchRegexp(`(?m)^podinfo +\d+s +True +Reconciliation finished in 52s$`))

	for _, resource := range []string{"rset", "resourcesets.fluxcd.controlplane.io"} {
		out, err = kubectl(t, "", "get", resource, "podinfo", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("Reconciliation finished in 52s"))
	}

	out, err = kubectl(t, "", "get", "rsip", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`^NAME +AGE +GATES +READY +STATUS\n`))
	g.Expect(regexp.MustCompile(`(?m)^tenants +\d+s *$`).MatchString(out)).To(BeTrue(), out)
}
