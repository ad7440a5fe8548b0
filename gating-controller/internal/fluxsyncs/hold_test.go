package fluxsyncs

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Each kind is held while its gate is closed and released when it opens: spec.suspend is set
// and lifted with the marker, the held annotations come and go, a reconcile is requested at
// once, the Approved condition and the Held and Released events say what happened.
func TestHoldAndRelease(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(kind.GVK.Kind, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			controllerFor(t, ns)
			createGate(t, ns, "sre-approval", gatingv1.GateClosed)
			created := createObject(t, kind, ns, "app", "sre-approval", false)

			closedMsg := "Reconciliation is waiting approval, gate '" + ns + "/sre-approval' is closed."
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker=true by=sre-approval since=set"))
			g.Eventually(approved(kind, ns, "app"), timeout).Should(Equal("False|GateClosed|" + closedMsg))
			g.Eventually(eventsOf(kind, ns, "app"), timeout).Should(ContainElement(
				"Normal Held: " + closedMsg + " Flux's spec.suspend is set until they open."))
			g.Expect(requestedAt(kind, ns, "app")(g)).To(BeEmpty())

			setGate(t, ns, "sre-approval", gatingv1.GateOpened)
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=absent marker= by= since=unset"))
			g.Eventually(approved(kind, ns, "app"), timeout).Should(Equal("True|GateOpened|" + approvedMessage))
			g.Expect(requestedAt(kind, ns, "app")(g)).NotTo(BeEmpty(), "a reconcile is asked for at once")
			g.Eventually(eventsOf(kind, ns, "app"), timeout).Should(ContainElement(HavePrefix("Normal Released: released by its gates after waiting ")))
			// The user's fields are untouched: the spec is the one created (with the CRD's defaults).
			g.Expect(read(g, kind, ns, "app").Object["spec"]).To(Equal(created.Object["spec"]))

			setGate(t, ns, "sre-approval", gatingv1.GateClosed)
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker=true by=sre-approval since=set"))
		})
	}
}

// A suspend the user set is theirs: the gates record that they hold the object, but never
// write spec.suspend, and it stays suspended when they open.
func TestUserSuspendIsNeverTouched(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(kind.GVK.Kind, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			controllerFor(t, ns)
			createGate(t, ns, "freeze", gatingv1.GateClosed)
			createObject(t, kind, ns, "app", "freeze", true)

			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker= by=freeze since=set"))
			g.Eventually(eventsOf(kind, ns, "app"), timeout).Should(ContainElement(
				ContainSubstring("It is suspended by its user, which the gates leave as it is.")))
			setGate(t, ns, "freeze", gatingv1.GateOpened)
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker= by= since=unset"))
			setGate(t, ns, "freeze", gatingv1.GateClosed)
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker= by=freeze since=set"))
			setGate(t, ns, "freeze", gatingv1.GateOpened)
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker= by= since=unset"))
			g.Expect(suspendManagers(g, kind, ns, "app")).To(Equal([]string{"user"}))
		})
	}
}

// The RFC's Story 1: two approvals; the message names the one that is closed; oneOf goes ahead
// with either.
func TestStoryOneMessage(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	controllerFor(t, ns)
	createGate(t, ns, "sre-approval", gatingv1.GateClosed)
	createGate(t, ns, "qa-approval", gatingv1.GateOpened)
	createObject(t, kustomization, ns, "my-app", "sre-approval, qa-approval", false)
	createObject(t, kustomization, ns, "either", "oneOf: sre-approval, qa-approval", false)

	g.Eventually(approved(kustomization, ns, "my-app"), timeout).Should(Equal(
		"False|GateClosed|Reconciliation is waiting approval, gate '" + ns + "/sre-approval' is closed."))
	g.Eventually(approved(kustomization, ns, "either"), timeout).Should(Equal("True|GateOpened|" + approvedMessage))
	g.Expect(held(kustomization, ns, "either")(g)).To(Equal("suspend=absent marker= by= since=unset"))

	setGate(t, ns, "qa-approval", gatingv1.GateClosed)
	g.Eventually(approved(kustomization, ns, "my-app"), timeout).Should(Equal(
		"False|GateClosed|Reconciliation is waiting approval, gate '" + ns + "/sre-approval' is closed and gate '" + ns + "/qa-approval' is closed."))
	g.Eventually(held(kustomization, ns, "my-app"), timeout).Should(Equal("suspend=true marker=true by=sre-approval, qa-approval since=set"))
	g.Eventually(approved(kustomization, ns, "either"), timeout).Should(Equal(
		"False|GateClosed|Reconciliation is waiting approval, none of its gates is opened: gate '" + ns +
			"/sre-approval' is closed and gate '" + ns + "/qa-approval' is closed."))
}

// A gate that does not exist holds, naming it; creating it opened releases.
func TestMissingGateHolds(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	controllerFor(t, ns)
	createObject(t, helmRelease, ns, "app", "nope", false)
	g.Eventually(approved(helmRelease, ns, "app"), timeout).Should(Equal(
		"False|GateClosed|Reconciliation is waiting approval, gate '" + ns + "/nope' does not exist."))
	g.Expect(held(helmRelease, ns, "app")(g)).To(Equal("suspend=true marker=true by=nope since=set"))
	createGate(t, ns, "nope", gatingv1.GateOpened)
	g.Eventually(held(helmRelease, ns, "app"), timeout).Should(Equal("suspend=absent marker= by= since=unset"))
}

// A malformed annotation holds (the gates it meant are unknown) with a Warning event naming
// the mistake, once; fixing it releases.
func TestMalformedAnnotationHolds(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	controllerFor(t, ns)
	createGate(t, ns, "a", gatingv1.GateOpened)
	obj := createObject(t, automation, ns, "app", "a,,a", false)
	g.Eventually(held(automation, ns, "app"), timeout).Should(Equal("suspend=true marker=true by=" + gatesapi.InvalidGatesHolder + " since=set"))
	warning := "Warning InvalidGates: annotation gating.toolkit.fluxcd.io/gates: gate 2 is empty: remove the extra comma; " +
		"reconciliation is held until it is fixed or removed"
	g.Eventually(eventsOf(automation, ns, "app"), timeout).Should(ContainElement(warning))
	// The event is recorded before the status is written: wait for the condition too.
	g.Eventually(approved(automation, ns, "app"), timeout).Should(Equal("False|GateClosed|Reconciliation is waiting approval, " +
		"annotation gating.toolkit.fluxcd.io/gates: gate 2 is empty: remove the extra comma."))

	annotate(t, obj, gatesapi.GatesAnnotation, "a")
	g.Eventually(held(automation, ns, "app"), timeout).Should(Equal("suspend=absent marker= by= since=unset"))
}

// Removing the annotation releases the object and removes the Approved condition.
func TestRemovingTheAnnotationReleases(t *testing.T) {
	g := NewWithT(t)
	ns, obj, _ := heldBehindFreeze(t, kustomization)
	g.Eventually(approved(kustomization, ns, "app"), timeout).ShouldNot(BeEmpty())

	annotate(t, obj, gatesapi.GatesAnnotation, "")
	g.Eventually(held(kustomization, ns, "app"), timeout).Should(Equal("suspend=absent marker= by= since=unset"))
	g.Eventually(approved(kustomization, ns, "app"), timeout).Should(BeEmpty())
	g.Expect(requestedAt(kustomization, ns, "app")(g)).NotTo(BeEmpty())
	g.Eventually(eventsOf(kustomization, ns, "app"), timeout).Should(ContainElement(
		HavePrefix("Normal Released: released: its gating.toolkit.fluxcd.io/gates annotation was removed after waiting ")))
}

// A manager started before Flux's CRDs existed holds their objects once the CRDs appear.
func TestKindsHeldWhenTheirCRDsAppear(t *testing.T) {
	g := NewWithT(t)
	ns := lateNamespace
	createGate(t, ns, "freeze", gatingv1.GateClosed)
	for _, kind := range Kinds {
		createObject(t, kind, ns, "late", "freeze", false)
	}
	for _, kind := range Kinds {
		g.Eventually(held(kind, ns, "late"), timeout).Should(Equal("suspend=true marker=true by=freeze since=set"), kind.GVK.Kind)
	}
}

// What the controller did lives on the object: a controller started after another held an
// object, and after its gate opened, releases it, once.
func TestHeldAcrossARestartIsReleasedOnce(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(kind.GVK.Kind, func(t *testing.T) {
			g := NewWithT(t)
			ns, _, stop := heldBehindFreeze(t, kind)
			stop()

			gate := &gatingv1.Gate{}
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "freeze"}, gate)).To(Succeed())
			patch := client.MergeFrom(gate.DeepCopy())
			gate.Spec.Default = gatingv1.GateOpened
			g.Expect(k8s.Patch(context.Background(), gate, patch)).To(Succeed())
			g.Consistently(held(kind, ns, "app"), 2*time.Second).Should(Equal("suspend=true marker=true by=freeze since=set"),
				"nothing releases it while no gating-controller runs")

			controllerFor(t, ns)
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=absent marker= by= since=unset"))
			first := requestedAt(kind, ns, "app")(g)
			g.Expect(first).NotTo(BeEmpty())
			g.Consistently(requestedAt(kind, ns, "app"), 3*time.Second).Should(Equal(first), "released once")
			g.Expect(eventsOf(kind, ns, "app")(g)).To(ContainElement(HavePrefix("Normal Released: ")))
		})
	}
}

// Resuming a held object by hand does not let it through: the next reconcile suspends it again
// (the admission policy of deploy/ does it before Flux can see it).
func TestResumedWhileHeldIsSuspendedAgain(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(kind.GVK.Kind, func(t *testing.T) {
			g := NewWithT(t)
			ns, _, _ := heldBehindFreeze(t, kind)

			obj := read(g, kind, ns, "app")
			patch := client.MergeFrom(obj.DeepCopy())
			g.Expect(unstructured.SetNestedField(obj.Object, false, "spec", "suspend")).To(Succeed())
			g.Expect(k8s.Patch(context.Background(), obj, patch, client.FieldOwner("flux"))).To(Succeed())
			g.Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker=true by=freeze since=set"))
		})
	}
}

// Removing the suspended annotation from a held object makes its suspend the user's: the gates
// release it without lifting it (flux-syncs.md, "Keeping a held object suspended").
func TestRemovingTheSuspendedMarkerKeepsTheSuspend(t *testing.T) {
	g := NewWithT(t)
	ns, obj, _ := heldBehindFreeze(t, kustomization)
	annotate(t, obj, gatesapi.SuspendedAnnotation, "")
	g.Consistently(held(kustomization, ns, "app"), 2*time.Second).Should(Equal("suspend=true marker= by=freeze since=set"))
	setGate(t, ns, "freeze", gatingv1.GateOpened)
	g.Eventually(held(kustomization, ns, "app"), timeout).Should(Equal("suspend=true marker= by= since=unset"))
}

// heldBehindFreeze starts a controller for a namespace of the test, and creates there a closed
// gate "freeze" and an object "app" of kind behind it, once the gates hold it.
func heldBehindFreeze(t *testing.T, kind Kind) (string, *unstructured.Unstructured, context.CancelFunc) {
	t.Helper()
	ns := env.Namespace(t)
	stop := controllerFor(t, ns)
	createGate(t, ns, "freeze", gatingv1.GateClosed)
	obj := createObject(t, kind, ns, "app", "freeze", false)
	NewWithT(t).Eventually(held(kind, ns, "app"), timeout).Should(Equal("suspend=true marker=true by=freeze since=set"))
	return ns, obj, stop
}
