package fluxsyncs

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// A Kustomization behind a gate approved for one revision: released while its source serves
// that revision, held again when the source moves to a newer one that waits for its own
// approval.
func TestKustomizationHeldByARevisionScopedGate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	controllerFor(t, ns)
	kind := Kinds[0] // Kustomization: the kind that knows its source's revision
	const r1, r2 = "main@sha1:1111111111111111111111111111111111111111", "main@sha1:2222222222222222222222222222222222222222"

	// The GitRepository the Kustomization applies (its sourceRef, "app"), with the artifact of r1.
	source := &unstructured.Unstructured{}
	source.SetAPIVersion(sourceAPIVersion)
	source.SetKind("GitRepository")
	source.SetNamespace(ns)
	source.SetName("app")
	g.Expect(unstructured.SetNestedField(source.Object, map[string]any{"interval": "10m", "url": "https://git.example.com/app"}, "spec")).To(Succeed())
	g.Expect(k8s.Create(ctx, source)).To(Succeed())
	setArtifact := func(revision string) {
		g.Expect(unstructured.SetNestedField(source.Object, map[string]any{
			"revision": revision, "digest": "sha256:00", "lastUpdateTime": time.Now().UTC().Format(time.RFC3339),
			"path": "gitrepository/app.tar.gz", "url": "http://source-controller/app.tar.gz",
		}, "status", "artifact")).To(Succeed())
		g.Expect(k8s.Status().Update(ctx, source)).To(Succeed())
	}
	setArtifact(r1)

	gate := &gatingv1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release"}, Spec: gatingv1.GateSpec{
		Default: gatingv1.GateClosed,
		Approval: &gatingv1.GateApprovalSpec{Rules: []gatingv1.GateApprovalRule{{Name: "sre", Minimum: 1,
			Approvers: gatingv1.GateApprovers{Users: []string{"ana"}}}}},
	}}
	g.Expect(k8s.Create(ctx, gate)).To(Succeed())
	waitGate(t, ns, "release", gatingv1.GateClosed)
	obj := createObject(t, kind, ns, "app", "release", false)
	g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker=true by=release since=set"))

	approve := func(revision string) {
		// alice's open request for the revision, as `kubectl gate open --revision` writes it.
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "release"}, gate)).To(Succeed())
		patch := client.MergeFrom(gate.DeepCopy())
		gate.SetAnnotations(map[string]string{
			gatesapi.OpenRequestAnnotation: time.Now().UTC().Format(time.RFC3339Nano), gatingv1.OpenRequestedByAnnotation: "alice",
			gatingv1.OpenRevisionAnnotation: revision,
		})
		g.Expect(k8s.Patch(ctx, gate, patch)).To(Succeed())
		// ana answers the request she sees: an approval the controller reads before the request
		// would answer none.
		g.Eventually(func(g Gomega) string {
			gate := &gatingv1.Gate{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "release"}, gate)).To(Succeed())
			if a := gate.Status.Approval; a != nil && a.Pending != nil {
				return a.Pending.Revision
			}
			return ""
		}, timeout).Should(Equal(revision))
		g.Expect(k8s.Create(ctx, &gatingv1.GateApproval{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "release-"},
			Spec: gatingv1.GateApprovalResponseSpec{Gate: "release", Decision: gatingv1.DecisionApprove,
				Revision: revision, User: "ana"},
		})).To(Succeed())
		g.Eventually(func(g Gomega) string {
			gate := &gatingv1.Gate{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "release"}, gate)).To(Succeed())
			return gate.Status.OpenedForRevision
		}, timeout).Should(Equal(revision))
	}

	// r1 approved: the Kustomization whose source serves r1 is released.
	approve(r1)
	g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=absent marker= by= since=unset"))

	// kustomize-controller applied r1, and the source moves to r2: it waits for its own approval.
	// The gating-controller looks again every minute, and at once when the object's metadata
	// changes, here a reconcile request (gate-controlled sources do not fetch r2 at all: docs).
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	g.Expect(unstructured.SetNestedField(obj.Object, r1, "status", "lastAppliedRevision")).To(Succeed())
	g.Expect(k8s.Status().Update(ctx, obj)).To(Succeed())
	setArtifact(r2)
	annotate(t, obj, "reconcile.fluxcd.io/requestedAt", "r2 arrived")
	g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker=true by=release since=set"))
	g.Eventually(approved(kind, ns, "app"), timeout).Should(ContainSubstring("revision '" + r2 + "' waits for its own approval"))

	// r2 approved: released again.
	approve(r2)
	g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=absent marker= by= since=unset"))
}
