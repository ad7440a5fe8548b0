package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// gatedSync is one of Flux's kinds that GatesAnnotation binds to gates, with a minimal valid spec.
type gatedSync struct {
	gvk  schema.GroupVersionKind
	spec func() map[string]any
}

var gatedSyncs = []gatedSync{
	{schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}, func() map[string]any {
		return map[string]any{"interval": "10m", "prune": true, "path": "./deploy",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "app"}}
	}},
	{schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}, func() map[string]any {
		return map[string]any{"interval": "10m", "chartRef": map[string]any{"kind": "OCIRepository", "name": "app"}}
	}},
	{schema.GroupVersionKind{Group: "image.toolkit.fluxcd.io", Version: "v1", Kind: "ImageUpdateAutomation"}, func() map[string]any {
		return map[string]any{"interval": "10m", "sourceRef": map[string]any{"kind": "GitRepository", "name": "app"}}
	}},
}

// The MutatingAdmissionPolicy gated-syncs-suspended of deploy/gating-controller suspends a Flux
// Kustomization, HelmRelease or ImageUpdateAutomation bound to gates as the API server admits it,
// so that Flux never applies it before the gating-controller holds it: when it is created, newly
// bound or rebound, or resumed while its gates hold it. It leaves every other write alone, above
// all the gating-controller's release and Flux's own updates, and never marks a user's suspend as
// the gates'. Each case reads both the object the API server answers and the one it stored.
//
// The test has a control plane of its own (with Flux's CRDs, installed after the policy as in a
// harness system), so the package's other tests see no mutating policy.
func TestSuspendPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	// Without Flux's CRDs there is nothing to probe: it installs the policies and returns.
	g.Expect(harness.InstallAdmissionPolicies(ctx, cp.Client, cp.Root)).To(Succeed())
	g.Expect(harness.InstallFluxCRDs(cp.Config, binDir)).To(Succeed())
	g.Expect(harness.WaitSuspendPolicy(ctx, cp.Client)).To(Succeed())

	const ns = "suspend-policy"
	g.Expect(cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	for _, kind := range gatedSyncs {
		t.Run(kind.gvk.Kind, func(t *testing.T) {
			s := &suspendPolicyCase{t: t, c: cp.Client, kind: kind, ns: ns}
			s.run()
		})
	}
}

type suspendPolicyCase struct {
	t    *testing.T
	c    client.Client
	kind gatedSync
	ns   string
}

func (s *suspendPolicyCase) object(name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(s.kind.gvk)
	u.SetNamespace(s.ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	u.Object["spec"] = s.kind.spec()
	return u
}

// expect checks, on the object the API server answered and on the one it stored, whether
// spec.suspend is true and whether SuspendedAnnotation is "true".
func (s *suspendPolicyCase) expect(step string, answered *unstructured.Unstructured, suspended, marked bool) {
	s.t.Helper()
	g := NewWithT(s.t)
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(s.kind.gvk)
	g.Expect(s.c.Get(context.Background(), client.ObjectKeyFromObject(answered), stored)).To(Succeed())
	for _, o := range []struct {
		what string
		obj  *unstructured.Unstructured
	}{{"answered", answered}, {"stored", stored}} {
		suspend, _, err := unstructured.NestedBool(o.obj.Object, "spec", "suspend")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(suspend).To(Equal(suspended), "%s: spec.suspend of the %s object", step, o.what)
		mark, has := o.obj.GetAnnotations()[gatesapi.SuspendedAnnotation]
		if marked {
			g.Expect(mark).To(Equal("true"), "%s: %s of the %s object", step, gatesapi.SuspendedAnnotation, o.what)
		} else {
			g.Expect(has).To(BeFalse(), "%s: %s of the %s object", step, gatesapi.SuspendedAnnotation, o.what)
		}
	}
}

// update writes u (after edit) with a plain update, as a controller or `kubectl edit` does.
func (s *suspendPolicyCase) update(u *unstructured.Unstructured, edit func(*unstructured.Unstructured)) {
	s.t.Helper()
	edit(u)
	NewWithT(s.t).Expect(s.c.Update(context.Background(), u)).To(Succeed())
}

func setAnnotation(u *unstructured.Unstructured, key, value string) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	u.SetAnnotations(a)
}

func removeAnnotations(u *unstructured.Unstructured, keys ...string) {
	a := u.GetAnnotations()
	for _, k := range keys {
		delete(a, k)
	}
	u.SetAnnotations(a)
}

// hold is the gating-controller's hold of an object already suspended: held-since and held-by.
func hold(u *unstructured.Unstructured) {
	setAnnotation(u, gatesapi.HeldSinceAnnotation, "2026-01-02T03:04:05Z")
	setAnnotation(u, gatesapi.HeldByAnnotation, "sre-approval")
}

// release is the gating-controller's release of an object it suspended, in one write.
func release(u *unstructured.Unstructured) {
	removeAnnotations(u, gatesapi.HeldSinceAnnotation, gatesapi.HeldByAnnotation, gatesapi.WaitingRevisionAnnotation,
		gatesapi.SuspendedAnnotation)
	unstructured.RemoveNestedField(u.Object, "spec", "suspend")
}

func (s *suspendPolicyCase) run() {
	t, g, ctx := s.t, NewWithT(s.t), context.Background()
	gated := map[string]string{gatesapi.GatesAnnotation: "sre-approval"}

	// (a) Created bound to gates: suspended for the gates.
	created := s.object("created", gated)
	g.Expect(s.c.Create(ctx, created)).To(Succeed())
	s.expect("create", created, true, true)

	// (a) Created by a server-side apply, as the kustomize-controller creates a child
	// Kustomization.
	applied := s.object("applied", gated)
	g.Expect(s.c.Patch(ctx, applied, client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership)).To(Succeed())
	s.expect("server-side apply create", applied, true, true)
	// Applying the same manifest again leaves it as it is; so does the gating-controller's release.
	applied = s.object("applied", gated)
	g.Expect(s.c.Patch(ctx, applied, client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership)).To(Succeed())
	s.expect("the same apply again", applied, true, true)
	s.update(applied, release)
	s.expect("release of the applied object", applied, false, false)
	applied = s.object("applied", gated)
	g.Expect(s.c.Patch(ctx, applied, client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership)).To(Succeed())
	s.expect("the same apply after the release", applied, false, false)

	// Not bound: never touched.
	plain := s.object("plain", map[string]string{"team": "a"})
	g.Expect(s.c.Create(ctx, plain)).To(Succeed())
	s.expect("create without the gates annotation", plain, false, false)
	s.update(plain, func(u *unstructured.Unstructured) { setAnnotation(u, "team", "b") })
	s.expect("update without the gates annotation", plain, false, false)

	// (b) Newly bound by an update.
	s.update(plain, func(u *unstructured.Unstructured) { setAnnotation(u, gatesapi.GatesAnnotation, "sre-approval") })
	s.expect("gates annotation added", plain, true, true)

	// The user's own suspend, at creation: not the gates'.
	users := s.object("users-suspend", gated)
	users.Object["spec"].(map[string]any)["suspend"] = true
	g.Expect(s.c.Create(ctx, users)).To(Succeed())
	s.expect("create suspended by the user", users, true, false)
	// Held by the gates (the gating-controller writes only held-since and held-by) and resumed by
	// the user: suspended again, now for the gates.
	s.update(users, hold)
	s.expect("hold of a suspended object", users, true, false)
	s.update(users, func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "suspend") })
	s.expect("resumed while held", users, true, true)

	// The life of a gated object with the gating-controller.
	obj := created
	s.update(obj, hold)
	s.expect("hold", obj, true, true)
	// (c) Resumed while held: `flux resume` sets spec.suspend to false.
	s.update(obj, func(u *unstructured.Unstructured) {
		g.Expect(unstructured.SetNestedField(u.Object, false, "spec", "suspend")).To(Succeed())
	})
	s.expect("resumed (suspend: false) while held", obj, true, true)
	// (c) Resumed while held, the suspend and its annotation removed.
	s.update(obj, func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "spec", "suspend")
		removeAnnotations(u, gatesapi.SuspendedAnnotation)
	})
	s.expect("resumed (suspend and annotation removed) while held", obj, true, true)
	// The release: held-since, held-by, the annotation and the suspend removed in one write.
	s.update(obj, func(u *unstructured.Unstructured) {
		setAnnotation(u, gatesapi.WaitingRevisionAnnotation, "main@sha1:0123456789abcdef")
	})
	s.expect("waiting revision recorded", obj, true, true)
	s.update(obj, release)
	s.expect("release", obj, false, false)
	// Flux's status writes, an unrelated spec change, and the user's own suspend of a released
	// object.
	g.Expect(unstructured.SetNestedField(obj.Object, int64(obj.GetGeneration()), "status", "observedGeneration")).To(Succeed())
	g.Expect(s.c.Status().Update(ctx, obj)).To(Succeed())
	s.expect("status update", obj, false, false)
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	g.Expect(observed).To(Equal(obj.GetGeneration()))
	s.update(obj, func(u *unstructured.Unstructured) {
		g.Expect(unstructured.SetNestedField(u.Object, "5m", "spec", "interval")).To(Succeed())
	})
	s.expect("spec change", obj, false, false)
	s.update(obj, func(u *unstructured.Unstructured) { setAnnotation(u, gatesapi.GatesAnnotation, "sre-approval") })
	s.expect("gates annotation written again unchanged", obj, false, false)
	// (b) Rebound to other gates.
	s.update(obj, func(u *unstructured.Unstructured) {
		setAnnotation(u, gatesapi.GatesAnnotation, "oneOf: sre-approval, bypass")
	})
	s.expect("rebound", obj, true, true)
	s.update(obj, release)
	s.expect("release after rebinding", obj, false, false)
	s.update(obj, func(u *unstructured.Unstructured) {
		g.Expect(unstructured.SetNestedField(u.Object, true, "spec", "suspend")).To(Succeed())
	})
	s.expect("suspended by the user", obj, true, false)
	s.update(obj, func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "suspend") })
	s.expect("resumed by the user, not held", obj, false, false)
	// Unbound: no longer touched, even when the gates annotation comes back by a rebinding later.
	s.update(obj, func(u *unstructured.Unstructured) { removeAnnotations(u, gatesapi.GatesAnnotation) })
	s.expect("gates annotation removed", obj, false, false)
	s.update(obj, func(u *unstructured.Unstructured) { setAnnotation(u, gatesapi.GatesAnnotation, "sre-approval") })
	s.expect("bound again", obj, true, true)
	t.Logf("%s: every case checked", s.kind.gvk.Kind)
}
