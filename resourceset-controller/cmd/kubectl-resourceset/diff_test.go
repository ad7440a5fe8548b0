package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/ssa"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// applyBuild applies what `build` prints as the controller does: server-side apply with its
// field manager, Namespaces and CRDs first.
func applyBuild(t *testing.T, args ...string) {
	t.Helper()
	g := NewWithT(t)
	res := build(t, args...)
	g.Expect(res.exitCode).To(Equal(0))
	rm := ssa.NewResourceManager(env.Client, nil, ssa.Owner{Field: "resourceset-controller", Group: "resourceset.fluxcd.controlplane.io"})
	_, err := rm.ApplyAllStaged(context.Background(), parseStream(t, res.stdout), ssa.DefaultApplyOptions())
	g.Expect(err).NotTo(HaveOccurred())
}

// settings is a ResourceSet of one ConfigMap whose value is an input.
func settings(namespace, value string) string {
	return fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: settings
spec:
  inputs:
    - value: %q
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: settings
        namespace: %s
      data:
        value: << inputs.value | quote >>
        fixed: "1"
`, value, namespace)
}

func TestDiffCreatedUnchangedConfigured(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	file := writeFile(t, "settings.yaml", settings(ns, "one"))

	res := diff(t, "-f", file, "-n", ns)
	g.Expect(res.exitCode).To(Equal(1), "differences")
	g.Expect(res.stdout).To(Equal("► ConfigMap/" + ns + "/settings created\n"))
	g.Expect(res.stderr).To(BeEmpty())
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "settings"}, cm)).
		To(MatchError(ContainSubstring("not found")), "a dry-run creates nothing")

	applyBuild(t, "-f", file, "-n", ns)
	res = diff(t, "-f", file, "-n", ns)
	g.Expect(res.exitCode).To(Equal(0), "no differences")
	g.Expect(res.stdout).To(Equal("► ConfigMap/" + ns + "/settings unchanged\n"))
	g.Expect(res.stderr).To(BeEmpty())

	changed := writeFile(t, "settings.yaml", settings(ns, "two"))
	res = diff(t, "-f", changed, "-n", ns)
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stderr).To(BeEmpty())
	g.Expect(res.stdout).To(HavePrefix("► ConfigMap/" + ns + "/settings configured\n"))
	g.Expect(res.stdout).To(ContainSubstring("--- live/ConfigMap/" + ns + "/settings\n+++ merged/ConfigMap/" + ns + "/settings\n"))
	g.Expect(res.stdout).To(ContainSubstring("\n-  value: one\n+  value: two\n"))
	g.Expect(res.stdout).NotTo(ContainSubstring("managedFields"))
	g.Expect(res.stdout).NotTo(ContainSubstring("resourceVersion"))
}

// Secret values never show: not in a created Secret, not in a changed one, not in kubectl's
// last-applied annotation of a Secret first created with kubectl apply.
func TestDiffMasksSecrets(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	secret := func(token string) string {
		return writeFile(t, "secret.yaml", fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: credentials
spec:
  inputs:
    - token: %q
  resources:
    - apiVersion: v1
      kind: Secret
      metadata:
        name: credentials
        namespace: %s
      stringData:
        token: << inputs.token >>
        user: admin
`, token, ns))
	}
	leaks := func(res result, values ...string) {
		t.Helper()
		for _, v := range values {
			g.Expect(res.stdout + res.stderr).NotTo(ContainSubstring(v))
			g.Expect(res.stdout + res.stderr).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(v))))
		}
	}

	res := diff(t, "-f", secret("s3cr3t-one"), "-n", ns)
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stdout).To(Equal("► Secret/" + ns + "/credentials created\n"))
	leaks(res, "s3cr3t-one")

	applyBuild(t, "-f", secret("s3cr3t-one"), "-n", ns)
	res = diff(t, "-f", secret("s3cr3t-two"), "-n", ns)
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stdout).To(HavePrefix("► Secret/" + ns + "/credentials configured\n"))
	g.Expect(res.stdout).To(ContainSubstring("-  token: '*** (before)'\n+  token: '*** (after)'\n"))
	g.Expect(res.stdout).To(ContainSubstring("   user: '***'\n"), "unchanged values are masked too")
	leaks(res, "s3cr3t-one", "s3cr3t-two", "admin")

	// A Secret that kubectl apply created carries its data in clear in an annotation.
	lastApplied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"legacy"},"stringData":{"token":"s3cr3t-kubectl"}}`
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy",
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied}},
		StringData: map[string]string{"token": "s3cr3t-kubectl"},
	})).To(Succeed())
	legacy := writeFile(t, "legacy.yaml", fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: legacy
spec:
  resources:
    - apiVersion: v1
      kind: Secret
      metadata:
        name: legacy
        namespace: %s
      stringData:
        token: s3cr3t-generated
`, ns))
	res = diff(t, "-f", legacy, "-n", ns)
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stdout).To(HavePrefix("► Secret/" + ns + "/legacy configured\n"))
	g.Expect(res.stdout).To(ContainSubstring("kubectl.kubernetes.io/last-applied-configuration: '***'"))
	leaks(res, "s3cr3t-kubectl", "s3cr3t-generated")
}

// Objects in a Namespace that the set itself creates are reported as created, not as the
// failure of their dry-run.
func TestDiffObjectsInANewNamespaceOfTheSet(t *testing.T) {
	g := NewWithT(t)
	tenant := env.Namespace(t) + "-tenant"
	file := writeFile(t, "tenant.yaml", fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: tenant
spec:
  inputs:
    - tenant: %s
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: << inputs.tenant >>
    - apiVersion: v1
      kind: ServiceAccount
      metadata:
        name: flux
        namespace: << inputs.tenant >>
`, tenant))
	res := diff(t, "-f", file)
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stderr).To(BeEmpty())
	g.Expect(res.stdout).To(Equal("► Namespace/" + tenant + " created\n► ServiceAccount/" + tenant + "/flux created\n"))
}

// What the ResourceSet applied before (its inventory in the cluster) and no longer generates is
// reported as deleted, unless the garbage collection would keep it.
func TestDiffReportsDeletedObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	rset := func(names ...string) string {
		var inputs strings.Builder
		for _, n := range names {
			fmt.Fprintf(&inputs, "    - name: %s\n", n)
		}
		return writeFile(t, "rset.yaml", fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: configs
  namespace: %s
spec:
  inputs:
%s  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: << inputs.name >>
        namespace: %s
`, ns, inputs.String(), ns))
	}
	applyBuild(t, "-f", rset("a", "b", "kept", "gone"))
	kept := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, kept)).To(Succeed())
	kept.Annotations = map[string]string{rsv1.PruneAnnotation: rsv1.DisabledValue}
	g.Expect(env.Client.Update(ctx, kept)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}})).To(Succeed())

	// The ResourceSet as the controller left it: its inventory lists the four ConfigMaps.
	live := &rsv1.ResourceSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configs"},
		Spec: rsv1.ResourceSetSpec{Resources: []*apiextensionsv1.JSON{
			{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)},
		}},
	}
	g.Expect(env.Client.Create(ctx, live)).To(Succeed())
	live.Status.Inventory = &rsv1.ResourceInventory{}
	for _, n := range []string{"a", "b", "gone", "kept"} {
		live.Status.Inventory.Entries = append(live.Status.Inventory.Entries,
			rsv1.ResourceRef{ID: ns + "_" + n + "__ConfigMap", Version: "v1"})
	}
	g.Expect(env.Client.Status().Update(ctx, live)).To(Succeed())

	res := diff(t, "-f", rset("a"))
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stderr).To(BeEmpty())
	g.Expect(res.stdout).To(Equal("► ConfigMap/" + ns + "/a unchanged\n► ConfigMap/" + ns + "/b deleted\n"))

	res = diff(t, "-f", rset("a", "b"))
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal("► ConfigMap/" + ns + "/a unchanged\n► ConfigMap/" + ns + "/b unchanged\n"))
}

// Without --inputs-from, --diff reads the selected providers from the cluster, as the controller
// does.
func TestDiffReadsProvidersFromTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	provider := &rsv1.ResourceSetInputProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "versions"},
		Spec:       rsv1.ResourceSetInputProviderSpec{Type: rsv1.InputProviderOCIArtifactTag, URL: "oci://example.com/podinfo"},
	}
	g.Expect(env.Client.Create(ctx, provider)).To(Succeed())
	file := writeFile(t, "rset.yaml", fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: apps
spec:
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: versions
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app-<< inputs.tag | replace "." "-" >>
        namespace: %s
`, ns))

	res := diff(t, "-f", file, "-n", ns)
	g.Expect(res.exitCode).To(Equal(2))
	g.Expect(res.stderr).To(ContainSubstring("error: ResourceSet '" + ns + "/apps': input provider '" + ns + "/versions' has not exported inputs yet"))

	provider.Status.LastExportedRevision = "sha256:0123"
	provider.Status.ExportedInputs = []rsv1.ResourceSetInput{
		{"id": {Raw: []byte(`"1"`)}, "tag": {Raw: []byte(`"6.7.1"`)}},
	}
	g.Expect(env.Client.Status().Update(ctx, provider)).To(Succeed())
	res = diff(t, "-f", file, "-n", ns)
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stdout).To(Equal("► ConfigMap/" + ns + "/app-6-7-1 created\n"))

	res = diff(t, "-f", file, "-n", "elsewhere")
	g.Expect(res.exitCode).To(Equal(2))
	g.Expect(res.stderr).To(ContainSubstring("input provider 'elsewhere/versions' not found in " + file + ", the cluster"))
}

// Errors exit 2 with --diff, as with kubectl diff; objects that could be compared are still
// reported.
func TestDiffErrors(t *testing.T) {
	t.Run("a kind the cluster does not serve", func(t *testing.T) {
		g := NewWithT(t)
		// The test cluster has the OCIRepository CRD of the source-controller, no HelmRelease.
		res := diff(t, "-f", "testdata/podinfo.yaml")
		g.Expect(res.exitCode).To(Equal(2))
		g.Expect(res.stdout).To(Equal("► OCIRepository/default/podinfo-team1 created\n► OCIRepository/default/podinfo-team2 created\n"))
		g.Expect(res.stderr).To(ContainSubstring("✗ HelmRelease/default/podinfo-team1 dry-run failed"))
		g.Expect(res.stderr).To(ContainSubstring("error: 2 of 4 objects could not be compared"))
	})

	t.Run("a build error", func(t *testing.T) {
		g := NewWithT(t)
		file := writeFile(t, "broken.yaml", "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: broken\n"+
			"spec:\n  resourcesTemplate: |\n    kind: << nope >>\n")
		res := diff(t, "-f", file)
		g.Expect(res.exitCode).To(Equal(2))
		g.Expect(res.stderr).To(ContainSubstring(`error: ResourceSet 'default/broken': build failed: template: resourcesTemplate:1:`))
	})

	t.Run("an unreachable cluster", func(t *testing.T) {
		g := NewWithT(t)
		res := diff(t, "-f", "testdata/podinfo.yaml", "--server", "https://127.0.0.1:1")
		g.Expect(res.exitCode).To(Equal(2))
		g.Expect(res.stdout).To(BeEmpty())
		g.Expect(res.stderr).To(HavePrefix("error: cannot reach the cluster: "))
		g.Expect(res.stderr).To(ContainSubstring("connection refused"))
		g.Expect(strings.Count(res.stderr, "\n")).To(Equal(1), "said once")
	})
}
