package apitest

import (
	"context"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// The served CRDs carry the short names and the AGE GATES READY STATUS columns of the other Sluice kinds,
// plus the applied revision or the pushed commit, and the replica of each object with -o wide
// (SHARD, with --sharding).
func TestServedCRDs(t *testing.T) {
	readyColumns := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		{Name: "Gates", Type: "string", JSONPath: ".status.gates.state"},
		{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
		{Name: "Status", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].message`},
	}
	for _, tc := range []struct {
		crd, shortName string
		last           apiextensionsv1.CustomResourceColumnDefinition
	}{
		{"manifestgenerations.generator.toolkit.fluxcd.io", "mgen",
			apiextensionsv1.CustomResourceColumnDefinition{Name: "Revision", Type: "string", JSONPath: ".status.lastAppliedRevision"}},
		{"manifestupdates.generator.toolkit.fluxcd.io", "mupd",
			apiextensionsv1.CustomResourceColumnDefinition{Name: "Commit", Type: "string", JSONPath: ".status.commit"}},
	} {
		t.Run(tc.crd, func(t *testing.T) {
			g := NewWithT(t)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: tc.crd}, crd)).To(Succeed())
			g.Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))
			g.Expect(crd.Spec.Names.ShortNames).To(ConsistOf(tc.shortName))
			g.Expect(crd.Spec.Versions).To(HaveLen(1))
			v := crd.Spec.Versions[0]
			g.Expect(v.Name).To(Equal("v1alpha1"))
			g.Expect(v.Subresources.Status).NotTo(BeNil())
			shard := apiextensionsv1.CustomResourceColumnDefinition{Name: "Shard", Type: "string", Priority: 1,
				JSONPath: `.metadata.labels.sharding\.sluice\.dev/shard`}
			g.Expect(v.AdditionalPrinterColumns).To(Equal(append(append(readyColumns[:len(readyColumns):len(readyColumns)], tc.last), shard)))
		})
	}
}

// `kubectl get mgen` and `kubectl get mupd` print the Ready condition, the revision and the commit.
func TestKubectlGetColumns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)

	g.Expect(createYAML(t, ns, minimalGeneration)).To(Succeed())
	mgen := &generatorv1.ManifestGeneration{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, mgen)).To(Succeed())
	mgen.SetConditions([]metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: generatorv1.ReconciliationSucceededReason,
		Message: "Applied revision: main@sha1:4d5c2a1", LastTransitionTime: metav1.Now(), ObservedGeneration: mgen.Generation}})
	mgen.Status.LastAppliedRevision = "main@sha1:4d5c2a1"
	g.Expect(env.Client.Status().Update(ctx, mgen)).To(Succeed())

	g.Expect(createYAML(t, ns, imageUpdate)).To(Succeed())
	mupd := &generatorv1.ManifestUpdate{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo-image"}, mupd)).To(Succeed())
	mupd.SetConditions([]metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: generatorv1.CommittedReason,
		Message: "Pushed commit 9f3e1b2 to main", LastTransitionTime: metav1.Now(), ObservedGeneration: mupd.Generation}})
	mupd.Status.Commit = "9f3e1b2"
	g.Expect(env.Client.Status().Update(ctx, mupd)).To(Succeed())

	for _, resource := range []string{"manifestgeneration", "mgen", "manifestgenerations.generator.toolkit.fluxcd.io"} {
		out, err := kubectl(t, "", "get", resource, "-n", ns)
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(MatchRegexp(`^NAME +AGE +GATES +READY +STATUS +REVISION\n`))
		g.Expect(out).To(MatchRegexp(`(?m)^podinfo +\d+s +True +Applied revision: main@sha1:4d5c2a1 +main@sha1:4d5c2a1$`))
	}
	for _, resource := range []string{"manifestupdate", "mupd", "manifestupdates.generator.toolkit.fluxcd.io"} {
		out, err := kubectl(t, "", "get", resource, "-n", ns)
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(MatchRegexp(`^NAME +AGE +GATES +READY +STATUS +COMMIT\n`))
		g.Expect(out).To(MatchRegexp(`(?m)^podinfo-image +\d+s +True +Pushed commit 9f3e1b2 to main +9f3e1b2$`))
	}

	// Before the first reconciliation, the columns are empty.
	g.Expect(createYAML(t, ns, policiesUpdate)).To(Succeed())
	out, err := kubectl(t, "", "get", "mupd", "podinfo-policies", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(regexp.MustCompile(`(?m)^podinfo-policies +\d+s *$`).MatchString(out)).To(BeTrue(), out)
}
