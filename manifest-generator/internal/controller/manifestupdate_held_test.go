package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// A change committed while the gates of its ManifestGeneration hold it is not reported Ready:
// it says what holds it, and turns Ready when they open, with no second push.
func TestManifestUpdateWaitsForTheGatesOfItsGeneration(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment})
	gatestest.SetOpened(t, k8s, f.ns, "freeze", false)
	gen := &generatorv1.ManifestGeneration{}
	genKey := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	g.Expect(k8s.Get(ctx, genKey, gen)).To(Succeed())
	patch := client.MergeFrom(gen.DeepCopy())
	gen.Spec.Gates = &gatesapi.Gates{Refs: []string{"freeze"}}
	g.Expect(k8s.Patch(ctx, gen, patch)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		st := getGeneration(g, genKey).Status.Gates
		g.Expect(st).NotTo(BeNil())
		return st.State
	}, timeout).Should(Equal("closed (freeze)"))

	key := f.createUpdate(t, imageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("False|GateClosed|committed "))
	head := f.head(t)
	g.Expect(getUpdate(g, key).Status.Commit).To(Equal(head))
	g.Expect(updateReady(key)(g)).To(Equal("False|GateClosed|committed " + head +
		" to master; not applied yet: ManifestGeneration 'apps' is held by its gates: closed (freeze)"))

	gatestest.SetOpened(t, k8s, f.ns, "freeze", true)
	g.Eventually(updateReady(key), timeout).Should(Equal("True|Committed|committed " + head + " to master"))
	g.Expect(f.head(t)).To(Equal(head), "nothing pushed again")
}

// The gates of the GitRepository the generation reads hold the change too.
func TestManifestUpdateWaitsForTheGatesOfTheRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment})
	// No source-controller runs here: the repository's status is written as it would write it.
	setRepoGates := func(state string, held bool) {
		repo := newSource(generatorv1.GitRepositoryKind)
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "fleet"}, repo)).To(Succeed())
		st := map[string]any{"state": state}
		if held {
			st["heldSince"] = "2026-11-20T10:00:00Z"
		}
		g.Expect(unstructured.SetNestedField(repo.Object, st, "status", "gates")).To(Succeed())
		g.Expect(k8s.Status().Update(ctx, repo)).To(Succeed())
	}
	setRepoGates("closed (change-freeze)", true)

	key := f.createUpdate(t, imageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HaveSuffix(
		"not applied yet: GitRepository 'fleet' is held by its gates: closed (change-freeze)"))
	setRepoGates("open", false)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|committed "))
}
