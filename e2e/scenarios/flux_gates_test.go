package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// The gating RFC's Story 1, with the annotation in place of `spec.gates` (Flux's CRD has no
// such field) and the scenario's namespace in place of flux-system: an SRE gate closed by
// default that opens for an hour, and a QA gate.
const storyOne = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: sre-approval
spec:
  interval: 30s
  default: closed
  window: 1h
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: qa-approval
spec:
  default: opened
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: slow-lane
spec:
  default: opened
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 2s
  url: __GIT__
  secretRef:
    name: git-credentials
`

const storyOneKustomization = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: my-app
  annotations:
    gating.toolkit.fluxcd.io/gates: "sre-approval, qa-approval"
spec:
  interval: 1m
  path: ./deploy
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: GitRepository
    name: app
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: paused-by-user
  annotations:
    gating.toolkit.fluxcd.io/gates: "sre-approval"
spec:
  suspend: true
  interval: 1m
  path: ./paused
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: GitRepository
    name: app
`

// slowKustomization waits for a Deployment that never becomes available (no node runs its
// pod), so its reconciliation lasts until its timeout: one in flight when its gate closes.
const slowKustomization = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: slow
  annotations:
    gating.toolkit.fluxcd.io/gates: "slow-lane"
spec:
  interval: 1m
  path: ./slow
  prune: true
  wait: true
  timeout: 10s
  targetNamespace: __NS__
  sourceRef:
    kind: GitRepository
    name: app
`

const slowDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: slow
spec:
  replicas: 1
  selector:
    matchLabels: {app: slow}
  template:
    metadata:
      labels: {app: slow}
    spec:
      containers:
        - name: app
          image: registry.invalid/slow:1
`

// Flux's own kustomize-controller, gated by Sluice without any change to Flux: a Kustomization
// created while its gate is closed is never applied, not even once (the admission policy of
// deploy/ suspends it as it is created); it applies within seconds of `kubectl gate open`; a
// closed gate lets the reconciliation in flight finish and holds the next revision, which the
// annotations name; a Kustomization its user suspended stays suspended; one held when the
// gating-controller restarts is released once after. The Approved condition says the RFC's
// words and Flux's controller leaves it in place. Not parallel: the gating-controller is
// restarted, which would delay the other scenarios' gates.
func TestScenarioFluxGates(t *testing.T) {
	s := newScenario(t, "flux-gates")
	g := s.g
	kustomizeController(t)
	// Flux's CRDs are new to the API server: the suspend policy of deploy/ applies to their
	// objects a moment later.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g.Expect(harness.WaitSuspendPolicy(ctx, k8s())).To(Succeed())

	s.gitSecret(s.ns, "git-credentials")
	repo, sha := s.newRepo("flux-gates", map[string]string{
		"deploy/app.yaml":   configMapYAML("my-app", "v1"),
		"paused/app.yaml":   configMapYAML("paused-by-user", "v1"),
		"slow/app.yaml":     slowDeployment,
		"slow/marker.yaml":  configMapYAML("slow", "v1"),
		"deploy/extra.yaml": configMapYAML("my-app-extra", "v1"),
	})
	s.create(storyOne, "__GIT__", repo.HTTPURL())
	rev1 := "master@sha1:" + sha
	g.Eventually(revisionOf(gitRepositoryGVK, s.ns, "app"), timeout).Should(Equal(rev1))
	g.Eventually(conditionOf(gateGVK, s.ns, "sre-approval", "Opened"), timeout).Should(HavePrefix("False|"))
	g.Eventually(conditionOf(gateGVK, s.ns, "qa-approval", "Opened"), timeout).Should(HavePrefix("True|"))

	// Created while sre-approval is closed: suspended at admission, never applied.
	created := s.create(storyOneKustomization)
	suspend, _, _ := unstructured.NestedBool(created[0].Object, "spec", "suspend")
	g.Expect(suspend).To(BeTrue(), "suspended as it was created")
	g.Expect(created[0].GetAnnotations()).To(HaveKeyWithValue(gatesapi.SuspendedAnnotation, "true"))
	waiting := "False|GateClosed|Reconciliation is waiting approval, gate '" + s.ns + "/sre-approval' is closed."
	g.Eventually(conditionOf(kustomizationGVK, s.ns, "my-app", "Approved"), timeout).Should(Equal(waiting))
	g.Consistently(func(g Gomega) {
		g.Expect(object(g, configMapGVK, s.ns, "my-app")).To(BeNil())
		g.Expect(str(mustObject(g, kustomizationGVK, s.ns, "my-app"), "status", "lastAttemptedRevision")).To(BeEmpty())
	}, 5*time.Second, 250*time.Millisecond).Should(Succeed(), "a Kustomization created behind a closed gate is not applied")
	g.Expect(eventMessages(g, s.ns, "my-app", gatesapi.HeldReason)).To(ContainElement(HavePrefix(strings.TrimPrefix(waiting, "False|GateClosed|"))))

	// Opened: applied within seconds, the RFC's Approved condition left in place by Flux.
	opened := time.Now()
	s.kubectlGate("open", "sre-approval", "Story 1: release my-app", "-n", s.ns)
	applied := settled(g, kustomizationGVK, s.ns, "my-app", Equal("True|ReconciliationSucceeded|Applied revision: "+rev1), nil)
	took := time.Since(opened)
	t.Logf("my-app applied %s after `kubectl gate open`", took.Round(10*time.Millisecond))
	g.Expect(took).To(BeNumerically("<", 10*time.Second), "applied within seconds of the open")
	g.Expect(condition(applied, "Approved")).To(Equal("True|GateOpened|Reconciliation is approved: its gates are opened."),
		"kustomize-controller keeps a condition it does not own")
	g.Expect(str(mustObject(g, configMapGVK, s.ns, "my-app"), "data", "version")).To(Equal("v1"))
	g.Expect(applied.GetAnnotations()).NotTo(HaveKey(gatesapi.SuspendedAnnotation))

	// The user's suspend is theirs: opened, it stays suspended and is never applied.
	g.Consistently(func(g Gomega) {
		paused := mustObject(g, kustomizationGVK, s.ns, "paused-by-user")
		suspend, _, _ := unstructured.NestedBool(paused.Object, "spec", "suspend")
		g.Expect(suspend).To(BeTrue())
		g.Expect(paused.GetAnnotations()).NotTo(HaveKey(gatesapi.SuspendedAnnotation))
		g.Expect(object(g, configMapGVK, s.ns, "paused-by-user")).To(BeNil())
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())

	// Closed: the next revision waits, named on the object.
	s.kubectlGate("close", "sre-approval", "-n", s.ns)
	g.Eventually(annotationOf(s.ns, "my-app", gatesapi.HeldSinceAnnotation), timeout).ShouldNot(BeEmpty())
	rev2 := "master@sha1:" + repo.Commit(t, "v2", map[string]string{"deploy/app.yaml": configMapYAML("my-app", "v2")})
	g.Eventually(revisionOf(gitRepositoryGVK, s.ns, "app"), timeout).Should(Equal(rev2))
	// Read again every minute, or at once when the object changes: `flux reconcile` writes
	// requestedAt, which Flux ignores while the object is suspended.
	testenv.Poke(t, k8s(), mustObject(g, kustomizationGVK, s.ns, "my-app"))
	g.Eventually(annotationOf(s.ns, "my-app", gatesapi.WaitingRevisionAnnotation), timeout).Should(Equal(rev2))
	g.Consistently(func(g Gomega) string {
		return str(mustObject(g, configMapGVK, s.ns, "my-app"), "data", "version")
	}, 4*time.Second, 250*time.Millisecond).Should(Equal("v1"), "the next revision waits behind the closed gate")
	pausedObj := mustObject(g, kustomizationGVK, s.ns, "paused-by-user")
	g.Expect(pausedObj.GetAnnotations()).NotTo(HaveKey(gatesapi.SuspendedAnnotation), "the user's suspend is never taken over")

	// A reconciliation in flight is not cut: slow waits for its Deployment when its gate
	// closes, runs to its timeout, records its result, and then pauses.
	s.create(slowKustomization)
	g.Eventually(exists(deploymentGVK, s.ns, "slow"), timeout).Should(BeTrue(), "slow's reconciliation is in flight")
	s.kubectlGate("close", "slow-lane", "-n", s.ns)
	g.Eventually(annotationOf(s.ns, "slow", gatesapi.HeldSinceAnnotation), timeout).ShouldNot(BeEmpty())
	heldSince, err := time.Parse(time.RFC3339, annotationOf(s.ns, "slow", gatesapi.HeldSinceAnnotation)(g))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		obj := mustObject(g, kustomizationGVK, s.ns, "slow")
		g.Expect(condition(obj, "Ready")).To(HavePrefix("False|HealthCheckFailed|"))
		g.Expect(str(obj, "status", "lastAttemptedRevision")).To(Equal(rev2))
		g.Expect(readyTransition(g, obj)).To(BeTemporally(">=", heldSince), "the result was written after the gate closed")
	}, timeout).Should(Succeed())
	g.Expect(object(g, configMapGVK, s.ns, "slow")).NotTo(BeNil(), "what it applied stays")

	// Restarted while my-app is held, with the gate opened meanwhile: released once.
	gating := sys.Controller("gating-controller")
	g.Expect(gating.Stop(30 * time.Second)).To(Succeed())
	s.kubectlGate("open", "sre-approval", "release v2", "-n", s.ns)
	g.Consistently(annotationOf(s.ns, "my-app", gatesapi.HeldSinceAnnotation), 2*time.Second).ShouldNot(BeEmpty())
	g.Expect(gating.Restart()).To(Succeed())
	g.Expect(gating.WaitReady(ctx)).To(Succeed())
	settled(g, kustomizationGVK, s.ns, "my-app", Equal("True|ReconciliationSucceeded|Applied revision: "+rev2), nil)
	g.Expect(str(mustObject(g, configMapGVK, s.ns, "my-app"), "data", "version")).To(Equal("v2"))
	requested := annotationOf(s.ns, "my-app", "reconcile.fluxcd.io/requestedAt")(g)
	g.Consistently(annotationOf(s.ns, "my-app", "reconcile.fluxcd.io/requestedAt"), 3*time.Second).Should(Equal(requested))
	g.Expect(eventMessages(g, s.ns, "my-app", gatesapi.ReleasedReason)).To(HaveLen(2), "one release per opening")
}

// annotationOf reads one annotation of a Kustomization.
func annotationOf(ns, name, key string) func(g Gomega) string {
	return func(g Gomega) string {
		return mustObject(g, kustomizationGVK, ns, name).GetAnnotations()[key]
	}
}

// eventMessages lists the messages of the events of a Kustomization with reason.
func eventMessages(g Gomega, ns, name, reason string) []string {
	list := &corev1.EventList{}
	g.Expect(k8s().List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Kustomization" && e.InvolvedObject.Name == name && e.Reason == reason {
			for range max(e.Count, 1) {
				out = append(out, e.Message)
			}
		}
	}
	return out
}

// readyTransition is when the Ready condition of obj last changed.
func readyTransition(g Gomega, obj *unstructured.Unstructured) time.Time {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			at, err := time.Parse(time.RFC3339, m["lastTransitionTime"].(string))
			g.Expect(err).NotTo(HaveOccurred())
			return at
		}
	}
	g.Expect("no Ready condition").To(BeEmpty())
	return time.Time{}
}
