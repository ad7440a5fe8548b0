package dependency

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newCRD returns a namespaced CRD for group/kind with plural and listKind as given.
func newCRD(group, kind, plural, listKind string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: listKind, Plural: plural},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v2", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

var helmReleasesCRD = Ref{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition",
	Name: "helmreleases.helm.toolkit.fluxcd.io", Ready: true}

// The first example of docs/resourceset.md: a dependency on a CRD with ready: true waits for the CRD to exist and
// be Established, although CRDs have no Ready condition (kstatus knows CRDs). The CRD is
// cluster-scoped, so the ResourceSet's namespace is not part of its name.
func TestCRDMustExistAndBeEstablished(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	exists := helmReleasesCRD
	exists.Ready = false

	g.Expect(check(ns, exists)).To(beNotReady(
		"dependency 'apiextensions.k8s.io/v1/CustomResourceDefinition helmreleases.helm.toolkit.fluxcd.io' not found"))
	g.Expect(check(ns, helmReleasesCRD)).To(beNotReady(
		"dependency 'apiextensions.k8s.io/v1/CustomResourceDefinition helmreleases.helm.toolkit.fluxcd.io' not found"))

	crd := newCRD("helm.toolkit.fluxcd.io", "HelmRelease", "helmreleases", "HelmReleaseList")
	g.Expect(k8s.Create(context.Background(), crd)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crd) })

	g.Expect(check(ns, exists)).To(Succeed())
	g.Eventually(func() error { return check(ns, helmReleasesCRD) }, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	// Several dependencies are all met.
	g.Expect(check(ns, exists, helmReleasesCRD)).To(Succeed())
}

// A CRD whose names are refused (its list kind is taken by another CRD of the group) never gets
// Established, so it is not ready, with kstatus' reason.
func TestCRDWithRefusedNamesIsNotReady(t *testing.T) {
	g := NewWithT(t)
	first := newCRD("refused.sluice.dev", "Thing", "things", "ThingList")
	second := newCRD("refused.sluice.dev", "Other", "others", "ThingList")
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{first, second} {
		g.Expect(k8s.Create(context.Background(), crd)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), crd) })
	}
	ref := Ref{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "others.refused.sluice.dev", Ready: true}

	g.Eventually(func() error {
		return check("default", Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: "things.refused.sluice.dev", Ready: true})
	},
		10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func() error { return check("default", ref) }, 10*time.Second, 100*time.Millisecond).Should(beNotReady(And(
		HavePrefix("dependency 'apiextensions.k8s.io/v1/CustomResourceDefinition others.refused.sluice.dev' is not ready: "),
		ContainSubstring("ThingList"))))
	g.Consistently(func() error { return check("default", ref) }, time.Second, 200*time.Millisecond).ShouldNot(Succeed())
}

// A custom resource with ready: true needs a Ready condition with status True, and its status
// must be about the current generation (Flux behaviour).
func TestCustomResourceNeedsReadyTrueForItsGeneration(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ref := Ref{APIVersion: "testing.sluice.dev/v1", Kind: "Widget", Name: "w", Ready: true}
	name := "dependency 'testing.sluice.dev/v1/Widget " + ns + "/w'"

	widget := createObject(t, "testing.sluice.dev/v1", "Widget", ns, "w", map[string]any{"size": int64(1)}, nil)
	// Existence alone is enough without ready.
	g.Expect(check(ns, Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: "w"})).To(Succeed())
	// Its controller did not write a status yet: kstatus would say Current, docs/resourceset.md says no.
	g.Expect(check(ns, ref)).To(beNotReady(name + " is not ready: it has no Ready condition with status True"))

	setStatus(t, widget, map[string]any{
		"observedGeneration": int64(1),
		"conditions":         []any{readyCondition("False", "Progressing", "Waiting for the widget to be built")},
	})
	g.Expect(check(ns, ref)).To(beNotReady(name + " is not ready: Waiting for the widget to be built"))

	setStatus(t, widget, map[string]any{
		"observedGeneration": int64(1),
		"conditions":         []any{readyCondition("True", "Succeeded", "Built")},
	})
	g.Expect(check(ns, ref)).To(Succeed())

	// A new generation the controller has not observed yet is not ready, even with Ready=True.
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(widget), widget)).To(Succeed())
	widget.Object["spec"] = map[string]any{"size": int64(2)}
	g.Expect(k8s.Update(context.Background(), widget)).To(Succeed())
	g.Expect(check(ns, ref)).To(beNotReady(ContainSubstring(name + " is not ready: ")))

	// Stalled is not ready either.
	setStatus(t, widget, map[string]any{
		"observedGeneration": int64(2),
		"conditions": []any{
			readyCondition("False", "BuildFailed", "The widget cannot be built"),
			map[string]any{"type": "Stalled", "status": "True", "reason": "BuildFailed", "message": "The widget cannot be built",
				"lastTransitionTime": "2026-01-01T00:00:00Z"},
		},
	})
	g.Expect(check(ns, ref)).To(beNotReady(name + " is not ready: The widget cannot be built"))
}

// Built-in kinds follow kstatus: objects without status are ready, a Deployment no controller
// rolled out is not.
func TestBuiltInKindsFollowKstatus(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	g.Expect(k8s.Create(context.Background(), cm)).To(Succeed())
	g.Expect(check(ns, Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "settings", Ready: true})).To(Succeed())

	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	g.Expect(k8s.Create(context.Background(), deploy)).To(Succeed())
	g.Expect(check(ns, Ref{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"})).To(Succeed())
	g.Expect(check(ns, Ref{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Ready: true})).To(
		beNotReady(HavePrefix("dependency 'apps/v1/Deployment " + ns + "/web' is not ready: ")))
}

// The first unmet dependency in order is reported; the namespace of a ref wins over the owner's.
func TestFirstUnmetDependencyIsReported(t *testing.T) {
	g := NewWithT(t)
	owner, other := env.Namespace(t), env.Namespace(t)
	g.Expect(k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "a"}})).To(Succeed())

	deps := []Ref{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "a", Namespace: other},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "b", Namespace: other},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "a"},
	}
	g.Expect(check(owner, deps...)).To(beNotReady("dependency 'v1/ConfigMap " + other + "/b' not found"))
	g.Expect(check(owner, deps[0], deps[2])).To(beNotReady("dependency 'v1/ConfigMap " + owner + "/a' not found"))
	g.Expect(check(other, deps[0], deps[2])).To(Succeed())
	g.Expect(check(owner)).To(Succeed())
}
