package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testserver"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// automatedDeployment is a Deployment of the fixture's namespace whose container app runs
// image, with the given policy annotations.
func automatedDeployment(image string, policies map[string]string) string {
	var b strings.Builder
	b.WriteString("# podinfo, released by the automation\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: " +
		nsPlaceholder + "\n  annotations:\n")
	// Sorted: two calls with the same policies write the same manifest.
	for _, k := range slices.Sorted(maps.Keys(policies)) {
		b.WriteString("    " + k + ": \"" + policies[k] + "\"\n")
	}
	b.WriteString(`spec:
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
        - name: app # the app itself
          image: ` + image + `
`)
	return b.String()
}

// automate turns on the automation of the fixture's generation (every second, plain HTTP),
// with gates when refs are given, and publishes the repository's head as its artifact.
func (f *updateFixture) automate(t *testing.T, gateRefs ...string) client.ObjectKey {
	t.Helper()
	return f.automateWith(t, func(*generatorv1.Automation) {}, gateRefs...)
}

// automateWith is automate with more of spec.automation set by with.
func (f *updateFixture) automateWith(t *testing.T, with func(*generatorv1.Automation), gateRefs ...string) client.ObjectKey {
	t.Helper()
	g := NewWithT(t)
	key := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	gen := &generatorv1.ManifestGeneration{}
	g.Expect(k8s.Get(context.Background(), key, gen)).To(Succeed())
	patch := client.MergeFrom(gen.DeepCopy())
	gen.Spec.Automation = &generatorv1.Automation{Interval: &metav1.Duration{Duration: time.Second}, Insecure: true}
	with(gen.Spec.Automation)
	if len(gateRefs) > 0 {
		gen.Spec.Gates = &gatesapi.Gates{Refs: gateRefs}
	}
	g.Expect(k8s.Patch(context.Background(), gen, patch)).To(Succeed())
	f.publishHead(t)
	return key
}

// releases are the automated ManifestUpdates of the namespace.
func releases(ns string) func(g Gomega) []generatorv1.ManifestUpdate {
	return func(g Gomega) []generatorv1.ManifestUpdate {
		list := &generatorv1.ManifestUpdateList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(ns),
			client.MatchingLabels{generatorv1.AutomatedLabel: "true"})).To(Succeed())
		return list.Items
	}
}

func deploymentImage(g Gomega, ns string) string {
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "podinfo"}, d)).To(Succeed())
	return d.Spec.Template.Spec.Containers[0].Image
}

func automationStatus(key client.ObjectKey) func(g Gomega) []generatorv1.AutomatedImage {
	return func(g Gomega) []generatorv1.AutomatedImage {
		st := getGeneration(g, key).Status.Automation
		if st == nil {
			return nil
		}
		return st.Images
	}
}

var day = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// A new tag in the semver range is released: one ManifestUpdate, one commit that changes only
// the image, which is then applied. A newer tag out of the range is not.
func TestAutomationReleasesANewSemverTag(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/podinfo", "6.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":6.0.0",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:~6.0"})})
	key := f.automate(t)

	g.Eventually(func(g Gomega) string { return deploymentImage(g, f.ns) }, timeout).Should(Equal(image + ":6.0.0"))
	g.Eventually(automationStatus(key), timeout).Should(ConsistOf(generatorv1.AutomatedImage{
		Workload: f.ns + ":deployment/podinfo", Container: "app", Image: image + ":6.0.0", Filter: "semver:~6.0", LatestTag: "6.0.0"}))
	g.Expect(releases(f.ns)(g)).To(BeEmpty())

	reg.PushImage(t, "apps/podinfo", "6.0.1", day.Add(time.Hour))
	reg.PushImage(t, "apps/podinfo", "6.1.0", day.Add(2*time.Hour)) // out of ~6.0
	g.Eventually(releases(f.ns), timeout).Should(HaveLen(1))
	mu := releases(f.ns)(g)[0]
	g.Expect(mu.Spec.ContainerImage).To(Equal(&generatorv1.ContainerImageUpdate{Container: "app", Image: image + ":6.0.1"}))
	g.Expect(mu.Labels).To(HaveKeyWithValue(generatorv1.GenerationLabel, "apps"))
	g.Expect(mu.OwnerReferences).To(ConsistOf(HaveField("Name", "apps")))
	muKey := client.ObjectKeyFromObject(&mu)
	g.Eventually(updateReady(muKey), timeout).Should(HavePrefix("True|Committed|committed "))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/podinfo.yaml"}))
	g.Expect(f.fileAtHead(t, "apps/podinfo.yaml") + "\n").To(Equal(strings.ReplaceAll(automatedDeployment(image+":6.0.1",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:~6.0"}), nsPlaceholder, f.ns)))
	g.Expect(f.commitCount(t)).To(Equal("2"))

	// The source-controller would fetch the commit: the new image is applied.
	f.publishHead(t)
	g.Eventually(func(g Gomega) string { return deploymentImage(g, f.ns) }, timeout).Should(Equal(image + ":6.0.1"))
	last := getGeneration(g, key).Status.Automation.LastRelease
	g.Expect(last).NotTo(BeNil())
	g.Expect(last.ManifestUpdate).To(Equal(mu.Name))
	g.Expect(last.Image).To(Equal(image + ":6.0.1"))
	g.Expect(eventsOf(key)(g)).To(ContainElement(ContainSubstring("Normal ReleaseCreated: ManifestUpdate '" + mu.Name + "' releases " + image + ":6.0.1")))
	// Released once: the next scans find the workload on the newest tag.
	g.Consistently(func(g Gomega) int { return len(releases(f.ns)(g)) }, 3*time.Second).Should(Equal(1))
	g.Expect(f.commitCount(t)).To(Equal("2"))
}

// patchUpdated with kustomize: the release is written into the patch file only.
func TestAutomationReleasesThroughThePatchFile(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{
		".flux.yaml":              "version: 1\npatchUpdated:\n  generators:\n    - command: kustomize build .\n  patchFile: flux-patch.yaml\n",
		"apps/kustomization.yaml": "resources:\n  - podinfo.yaml\n",
		"apps/podinfo.yaml":       automatedDeployment(image+":1.0.0", map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:^1"}),
	})
	f.automate(t)
	g.Eventually(func(g Gomega) string { return deploymentImage(g, f.ns) }, timeout).Should(Equal(image + ":1.0.0"))

	reg.PushImage(t, "apps/podinfo", "1.2.0", day.Add(time.Hour))
	g.Eventually(releases(f.ns), timeout).Should(HaveLen(1))
	muKey := client.ObjectKeyFromObject(&releases(f.ns)(g)[0])
	g.Eventually(updateReady(muKey), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))
	g.Expect(f.fileAtHead(t, "apps/flux-patch.yaml")).To(ContainSubstring("image: " + image + ":1.2.0"))
	f.publishHead(t)
	g.Eventually(func(g Gomega) string { return deploymentImage(g, f.ns) }, timeout).Should(Equal(image + ":1.2.0"))
}

// glob: the newest tag by image creation time wins, not the greatest name.
func TestAutomationGlobPicksTheNewestImage(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/podinfo", "main-aaa", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":main-aaa",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "glob:main-*"})})
	f.automate(t)
	g.Eventually(func(g Gomega) string { return deploymentImage(g, f.ns) }, timeout).Should(Equal(image + ":main-aaa"))

	// The newest first: a scan between two pushes must not see the older tag alone, which would
	// rightly be released.
	reg.PushImage(t, "apps/podinfo", "main-bbb", day.Add(2*time.Hour)) // newest
	reg.PushImage(t, "apps/podinfo", "main-zzz", day.Add(time.Hour))   // greater name, older
	reg.PushImage(t, "apps/podinfo", "dev-ccc", day.Add(3*time.Hour))  // out of the filter
	g.Eventually(releases(f.ns), timeout).Should(HaveLen(1))
	g.Expect(releases(f.ns)(g)[0].Spec.ContainerImage.Image).To(Equal(image + ":main-bbb"))
}

// A locked workload, and a new tag that the filter refuses, are not released.
func TestAutomationSkipsLockedWorkloadsAndTagsOutOfTheFilter(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/locked", "1.0.0", day)
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	locked := strings.Replace(automatedDeployment(reg.Host()+"/apps/locked:1.0.0", map[string]string{
		"fluxcd.io/automated": "true", "fluxcd.io/locked": "true", "fluxcd.io/locked_msg": "incident 42"}), "name: podinfo\n", "name: locked\n", 1)
	f := newUpdateFixture(t, map[string]string{
		"apps/locked.yaml":  locked,
		"apps/podinfo.yaml": automatedDeployment(image+":1.0.0", map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:1.0.x"}),
	})
	key := f.automate(t)
	g.Eventually(automationStatus(key), timeout).Should(HaveLen(2))

	reg.PushImage(t, "apps/locked", "2.0.0", day.Add(time.Hour))
	reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	scanned := getGeneration(g, key).Status.Automation.LastScanTime.Time
	g.Eventually(func(g Gomega) bool {
		return getGeneration(g, key).Status.Automation.LastScanTime.After(scanned.Add(time.Second))
	}, timeout).Should(BeTrue(), "scanned again")
	g.Consistently(releases(f.ns), 3*time.Second).Should(BeEmpty())
	g.Expect(f.commitCount(t)).To(Equal("1"))
	g.Expect(automationStatus(key)(g)).To(ContainElements(
		HaveField("Locked", true),
		And(HaveField("Workload", f.ns+":deployment/podinfo"), HaveField("LatestTag", "1.0.0")),
	))
}

// While the generation's gates are closed nothing is released; the release happens when they
// open.
func TestAutomationWaitsForTheGates(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":1.0.0",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:^1"})})
	gatestest.SetOpened(t, k8s, f.ns, "freeze", true)
	key := f.automate(t, "freeze")
	g.Eventually(func(g Gomega) string { return deploymentImage(g, f.ns) }, timeout).Should(Equal(image + ":1.0.0"))

	gatestest.SetOpened(t, k8s, f.ns, "freeze", false)
	g.Eventually(func(g Gomega) bool { return conditions.IsTrue(getGeneration(g, key), gatesapi.BlockedCondition) }, timeout).Should(BeTrue())
	reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	g.Consistently(releases(f.ns), 4*time.Second).Should(BeEmpty())

	gatestest.SetOpened(t, k8s, f.ns, "freeze", true)
	g.Eventually(releases(f.ns), timeout).Should(HaveLen(1))
	g.Expect(releases(f.ns)(g)[0].Spec.ContainerImage.Image).To(Equal(image + ":1.1.0"))
}

// An invalid filter is a condition that says what to fix; nothing is released.
func TestAutomationInvalidFilter(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(reg.Host()+"/apps/podinfo:1.0.0",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:1.x <<2"})})
	key := f.automate(t)

	g.Eventually(func(g Gomega) string {
		c := conditions.Get(getGeneration(g, key), generatorv1.AutomationFailedCondition)
		if c == nil {
			return ""
		}
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}, timeout).Should(And(
		HavePrefix("True|InvalidFilter|"+f.ns+":deployment/podinfo container app: "),
		ContainSubstring(`semver filter "1.x <<2"`),
		HaveSuffix("fix the fluxcd.io/tag.app annotation"),
	))
	g.Expect(automationFailedGauge(g, f.ns)).To(Equal("True"), "gotk_reconcile_condition")
	g.Expect(conditions.IsReady(getGeneration(g, key))).To(BeTrue(), "the apply is not affected")
	g.Expect(conditions.GetReason(getGeneration(g, key), meta.ReadyCondition)).To(Equal(generatorv1.ReconciliationSucceededReason))
	g.Consistently(releases(f.ns), 2*time.Second).Should(BeEmpty())
}

// A private registry over TLS: the automation trusts the CA of spec.automation.certSecretRef and
// reads the workload's imagePullSecrets as the generation's account.
func TestAutomationPrivateRegistry(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{TLS: true, Username: "bob", Password: "s3cret"})
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	deployment := strings.Replace(automatedDeployment(image+":1.0.0", map[string]string{"fluxcd.io/automated": "true"}),
		"    spec:\n", "    spec:\n      imagePullSecrets:\n        - name: regcred\n", 1)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": deployment})
	auth := base64.StdEncoding.EncodeToString([]byte("bob:s3cret"))
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.Host(): map[string]string{"auth": auth}}})
	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "regcred"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: config}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "registry-ca"},
		Data: map[string][]byte{"ca.crt": reg.CAPEM()}})).To(Succeed())

	key := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	gen := &generatorv1.ManifestGeneration{}
	g.Expect(k8s.Get(ctx, key, gen)).To(Succeed())
	patch := client.MergeFrom(gen.DeepCopy())
	gen.Spec.Automation = &generatorv1.Automation{Interval: &metav1.Duration{Duration: time.Second},
		CertSecretRef: &meta.LocalObjectReference{Name: "registry-ca"}}
	g.Expect(k8s.Patch(ctx, gen, patch)).To(Succeed())
	f.publishHead(t)
	g.Eventually(automationStatus(key), timeout).Should(ConsistOf(HaveField("LatestTag", "1.0.0")))

	reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	g.Eventually(releases(f.ns), timeout).Should(HaveLen(1))
	g.Expect(releases(f.ns)(g)[0].Spec.ContainerImage.Image).To(Equal(image + ":1.1.0"))
	g.Expect(conditions.Get(getGeneration(g, key), generatorv1.AutomationFailedCondition)).To(BeNil())
}

// automationFailedGauge is the status whose gotk_reconcile_condition{type="AutomationFailed"}
// series of the generation apps of ns is 1, "" when there is none.
func automationFailedGauge(g Gomega, ns string) string {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "gotk_reconcile_condition" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == generatorv1.ManifestGenerationKind && labels["namespace"] == ns && labels["name"] == "apps" &&
				labels["type"] == generatorv1.AutomationFailedCondition && m.GetGauge().GetValue() == 1 {
				return labels["status"]
			}
		}
	}
	return ""
}
