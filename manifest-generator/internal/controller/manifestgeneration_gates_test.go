package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// Closed gates hold new revisions (nothing applied, Blocked=True) while what was applied is
// still corrected; opening them applies the held revision.
func TestManifestGenerationGates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenantNamespace(t)
	gatestest.SetOpened(t, k8s, ns, "freeze", false)
	publish(t, ns, "repo", "main@sha1:e001", map[string]string{"staging/app.yaml": appV1})
	key := createGeneration(t, ns, generation+"  gates:\n    refs: [freeze]\n")
	blocked := func(g Gomega) bool { return conditions.IsTrue(getGeneration(g, key), gatesapi.BlockedCondition) }

	g.Eventually(blocked, timeout).Should(BeTrue())
	g.Consistently(func(g Gomega) any { return configMap(g, ns, "app") }, 2*time.Second).Should(BeNil(), "nothing applied while closed")
	g.Expect(conditions.IsReady(getGeneration(g, key))).To(BeFalse())

	gatestest.SetOpened(t, k8s, ns, "freeze", true)
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:e001"))
	g.Expect(conditions.IsTrue(getGeneration(g, key), gatesapi.BlockedCondition)).To(BeFalse())

	gatestest.SetOpened(t, k8s, ns, "freeze", false)
	g.Eventually(blocked, timeout).Should(BeTrue())
	publish(t, ns, "repo", "main@sha1:e002", map[string]string{
		"staging/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: '2'\n",
	})
	g.Consistently(func(g Gomega) any { return configMap(g, ns, "app") }, 2*time.Second).Should(HaveKeyWithValue("v", "1"))
	g.Expect(getGeneration(g, key).Status.LastAppliedRevision).To(Equal("main@sha1:e001"))
	// What waits is in the status, the Ready message and the GATES column of `kubectl get`.
	held := getGeneration(g, key).Status.Gates
	g.Expect(held.State).To(Equal("closed (freeze)"))
	g.Expect(held.WaitingRevision).To(Equal("main@sha1:e002"))
	g.Expect(readyCondition(key)(g)).To(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:e001; " +
		"revision 'main@sha1:e002' waits for the gates: closed (freeze)"))
	cols, err := env.Columns(ctx, generatorv1.GroupVersion.WithResource("manifestgenerations"), ns, key.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cols).To(HaveKeyWithValue("Gates", "closed (freeze)"))

	// Drift of the applied revision is corrected while the gate is closed.
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm)).To(Succeed())
	cm.Data["v"] = "edited"
	g.Expect(k8s.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	testenv.Poke(t, k8s, &generatorv1.ManifestGeneration{ObjectMeta: metaOf(key)})
	g.Eventually(func(g Gomega) any { return configMap(g, ns, "app") }, timeout).Should(HaveKeyWithValue("v", "1"))

	gatestest.SetOpened(t, k8s, ns, "freeze", true)
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:e002"))
	g.Expect(configMap(g, ns, "app")).To(HaveKeyWithValue("v", "2"))
	g.Expect(conditions.GetReason(getGeneration(g, key), meta.ReadyCondition)).To(Equal(generatorv1.ReconciliationSucceededReason))
	g.Expect(getGeneration(g, key).Status.Gates).To(Equal(&gatesapi.GatesStatus{State: "open"}))
	g.Eventually(eventsOf(key), timeout).Should(ContainElements(
		"Normal Held: Reconciliation is blocked as gate '"+ns+"/freeze' is closed.",
		MatchRegexp(`^Normal Released: released by its gates after waiting \d+s$`),
	))
}
