package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// fluxSpecs are the smallest specs the CRDs of Flux's annotated kinds accept.
var fluxSpecs = map[string]string{
	"kustomize.toolkit.fluxcd.io/v1/Kustomization":     "interval: 10m\n  prune: true\n  sourceRef: {kind: GitRepository, name: demo}",
	"helm.toolkit.fluxcd.io/v2/HelmRelease":            "interval: 10m\n  chartRef: {kind: OCIRepository, name: podinfo}",
	"image.toolkit.fluxcd.io/v1/ImageUpdateAutomation": "interval: 10m\n  sourceRef: {kind: GitRepository, name: demo}",
}

// fluxObject is a manifest of one of Flux's kinds bound by gatesapi.GatesAnnotation, with the
// annotations (the gates, and those the gating-controller writes while they hold it).
func fluxObject(apiVersionKind, name string, annotations map[string]string) string {
	spec, ok := fluxSpecs[apiVersionKind]
	if !ok {
		panic("no spec for " + apiVersionKind)
	}
	i := strings.LastIndex(apiVersionKind, "/")
	m := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  annotations:\n",
		apiVersionKind[:i], apiVersionKind[i+1:], name)
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m += fmt.Sprintf("    %s: %q\n", k, annotations[k])
	}
	return m + "spec:\n  " + spec + "\n"
}

// held are the annotations of an object whose gates hold it, as the gating-controller writes them.
func held(gates, since, revision string) map[string]string {
	a := map[string]string{gatesapi.GatesAnnotation: gates, gatesapi.HeldSinceAnnotation: since,
		gatesapi.HeldByAnnotation: gates}
	if revision != "" {
		a[gatesapi.WaitingRevisionAnnotation] = revision
	}
	return a
}

const waitingRevision = "main@sha1:0123456789abcdef0123456789abcdef01234567"

// fluxWaitingFixture makes the gates change-freeze and bypass-signoff in ns, Flux objects waiting
// on them, an ImageUpdateAutomation whose gates annotation does not parse, and, in another
// namespace, a HelmRelease that names ns/change-freeze. It returns the other namespace.
func fluxWaitingFixture(t *testing.T, ns string) string {
	createGate(t, ns, "change-freeze", gatingv1alpha1.GateSpec{})
	createGate(t, ns, "bypass-signoff", gatingv1alpha1.GateSpec{})
	createYAML(t, ns, fluxObject("kustomize.toolkit.fluxcd.io/v1/Kustomization", "apps",
		held("change-freeze, bypass-signoff", "2026-12-19T09:00:00Z", waitingRevision)))
	// Not held: the gates annotation alone.
	createYAML(t, ns, fluxObject("kustomize.toolkit.fluxcd.io/v1/Kustomization", "infra",
		map[string]string{gatesapi.GatesAnnotation: "oneOf: bypass-signoff, " + ns + "/change-freeze"}))
	// Held since a time written with an offset: shown in UTC like every time of the plugin.
	createYAML(t, ns, fluxObject("helm.toolkit.fluxcd.io/v2/HelmRelease", "podinfo",
		held("change-freeze", "2026-12-19T10:30:00+01:00", "")))
	createYAML(t, ns, fluxObject("image.toolkit.fluxcd.io/v1/ImageUpdateAutomation", "images", map[string]string{
		gatesapi.GatesAnnotation:     "sometimes: change-freeze",
		gatesapi.HeldSinceAnnotation: "2026-12-19T09:00:00Z",
		gatesapi.HeldByAnnotation:    gatesapi.InvalidGatesHolder,
	}))
	other := env.Namespace(t)
	createYAML(t, other, fluxObject("helm.toolkit.fluxcd.io/v2/HelmRelease", "frontend",
		held(ns+"/change-freeze", "2026-12-19T09:00:00Z", "")))
	return other
}

// The Flux objects of the namespace, as the page and the status show them behind change-freeze.
func fluxWaitingOnFreeze(ns string) []waitingObject {
	return []waitingObject{
		{Kind: "HelmRelease", Namespace: ns, Name: "podinfo", State: "closed (change-freeze)",
			HeldSince: "2026-12-19T09:30:00Z", WaitingRevision: "-"},
		{Kind: "Kustomization", Namespace: ns, Name: "apps", State: "closed (change-freeze, bypass-signoff)",
			HeldSince: "2026-12-19T09:00:00Z", WaitingRevision: waitingRevision},
		{Kind: "Kustomization", Namespace: ns, Name: "infra", State: "open", HeldSince: "-", WaitingRevision: "-"},
	}
}

// Flux's Kustomizations and HelmReleases wait on the gates their annotation names, in the state
// their held annotations say; an ImageUpdateAutomation whose annotation does not parse names no
// gate, and the page still shows the rest.
func TestUIStateListsFluxObjectsBoundByTheGatesAnnotation(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	fluxWaitingFixture(t, ns)

	st, err := newDashboard(t, env.Config, ns, "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Skipped).To(BeEmpty())
	g.Expect(st.Gates).To(HaveLen(2))
	bypass, freeze := st.Gates[0], st.Gates[1]
	g.Expect(freeze.Name).To(Equal("change-freeze"))
	g.Expect(freeze.Waiting).To(Equal(fluxWaitingOnFreeze(ns)))
	apps, infra := fluxWaitingOnFreeze(ns)[1], fluxWaitingOnFreeze(ns)[2]
	g.Expect(bypass.Waiting).To(Equal([]waitingObject{apps, infra}))
}

// With -A, an object of another namespace that names ns/gate waits on that gate.
func TestUIStateAllNamespacesListsFluxObjectsOfOtherNamespaces(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	other := fluxWaitingFixture(t, ns)

	st, err := newDashboard(t, env.Config, "", "2026-12-20T00:30:00Z").state(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var freeze *uiGate
	for i := range st.Gates {
		gate := &st.Gates[i]
		if gate.Namespace == ns && gate.Name == "change-freeze" {
			freeze = gate
		}
		for _, w := range gate.Waiting {
			g.Expect(w.Kind).NotTo(Equal("ImageUpdateAutomation"), "gate %s/%s", gate.Namespace, gate.Name)
		}
	}
	g.Expect(freeze).NotTo(BeNil())
	// Both namespaces are named after the test: which sorts first is up to the API server.
	g.Expect(freeze.Waiting).To(ConsistOf(append(fluxWaitingOnFreeze(ns), waitingObject{Kind: "HelmRelease",
		Namespace: other, Name: "frontend", State: "closed (" + ns + "/change-freeze)",
		HeldSince: "2026-12-19T09:00:00Z", WaitingRevision: "-"})))
}

// The held annotations are read leniently, like status.gates: a held-since that is not RFC 3339
// shows as "-".
func TestHeldOfReadsTheHeldAnnotationsLeniently(t *testing.T) {
	g := NewWithT(t)
	obj := testenv.FromYAML(t, "apps", fluxObject("kustomize.toolkit.fluxcd.io/v1/Kustomization", "podinfo",
		map[string]string{gatesapi.GatesAnnotation: "change-freeze", gatesapi.HeldSinceAnnotation: "yesterday",
			gatesapi.HeldByAnnotation: "change-freeze"}))
	g.Expect(heldOf("Kustomization", obj)).To(Equal(waitingObject{Kind: "Kustomization", Namespace: "apps",
		Name: "podinfo", State: "closed (change-freeze)", HeldSince: "-", WaitingRevision: "-"}))

	var images gatedKind
	for _, k := range gatedKinds {
		if k.kind == "ImageUpdateAutomation" {
			images = k
		}
	}
	g.Expect(images.annotated).To(BeTrue())
	refs, _ := gatesOf(images, &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "apps", "name": "images",
			"annotations": map[string]any{gatesapi.GatesAnnotation: "change-freeze,,bypass"}}}})
	g.Expect(refs).To(BeEmpty())
}

// status.gates is read leniently: a value of another type than the contract's shows as "-".
func TestWaitingOfReadsStatusGatesLeniently(t *testing.T) {
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "apps", "name": "podinfo"},
		"status": map[string]any{"gates": map[string]any{
			"state":           "closed (change-freeze)",
			"heldSince":       int64(12),
			"waitingRevision": []any{"not", "a", "string"},
		}},
	}}
	g.Expect(waitingOf("HelmChart", obj)).To(Equal(waitingObject{Kind: "HelmChart", Namespace: "apps", Name: "podinfo",
		State: "closed (change-freeze)", HeldSince: "-", WaitingRevision: "-"}))
}
