package apitest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// The first example of the ResourceSet documentation, as a user saves it into podinfo.yaml.
const podinfoExample = `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: podinfo
  namespace: default
  annotations:
    fluxcd.controlplane.io/reconcile: "enabled"
    fluxcd.controlplane.io/reconcileEvery: "30m"
    fluxcd.controlplane.io/reconcileTimeout: "5m"
spec:
  commonMetadata:
    labels:
      app.kubernetes.io/name: podinfo
  inputs:
    - tenant: "team1"
      app:
        version: "6.7.x"
        replicas: 2
    - tenant: "team2"
      app:
        version: "6.6.x"
        replicas: 3
  resources:
    - apiVersion: source.toolkit.fluxcd.io/v1beta2
      kind: OCIRepository
      metadata:
        name: podinfo-<< inputs.tenant >>
        namespace: default
      spec:
        interval: 10m
        url: oci://ghcr.io/stefanprodan/charts/podinfo
        ref:
          semver: << inputs.app.version | quote >>
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      metadata:
        name: podinfo-<< inputs.tenant >>
        namespace: default
      spec:
        interval: 1h
        releaseName: podinfo-<< inputs.tenant >>
        chartRef:
          kind: OCIRepository
          name: podinfo-<< inputs.tenant >>
        values:
          replicaCount: << inputs.app.replicas | int >>
`

// The podinfo example applies verbatim with kubectl and keeps its nested inputs and templates.
func TestResourceSetPodinfoExampleRoundTrips(t *testing.T) {
	g := NewWithT(t)
	out, err := kubectl(t, podinfoExample, "apply", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("resourceset.fluxcd.controlplane.io/podinfo created"))

	rset := &rsv1.ResourceSet{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "podinfo"}, rset)).To(Succeed())

	g.Expect(rset.Spec.CommonMetadata.Labels).To(Equal(map[string]string{"app.kubernetes.io/name": "podinfo"}))
	g.Expect(rset.Spec.Inputs).To(HaveLen(2))
	type app struct {
		Version  string `json:"version"`
		Replicas int    `json:"replicas"`
	}
	for i, want := range []struct {
		tenant string
		app    app
	}{{"team1", app{"6.7.x", 2}}, {"team2", app{"6.6.x", 3}}} {
		var tenant string
		g.Expect(json.Unmarshal(rset.Spec.Inputs[i]["tenant"].Raw, &tenant)).To(Succeed())
		g.Expect(tenant).To(Equal(want.tenant))
		var got app
		g.Expect(json.Unmarshal(rset.Spec.Inputs[i]["app"].Raw, &got)).To(Succeed())
		g.Expect(got).To(Equal(want.app))
		g.Expect(string(rset.Spec.Inputs[i]["app"].Raw)).To(ContainSubstring(`"replicas":`))
	}

	g.Expect(rset.Spec.Resources).To(HaveLen(2))
	var ocirepo map[string]any
	g.Expect(json.Unmarshal(rset.Spec.Resources[0].Raw, &ocirepo)).To(Succeed())
	g.Expect(ocirepo).To(HaveKeyWithValue("spec", HaveKeyWithValue("ref",
		HaveKeyWithValue("semver", "<< inputs.app.version | quote >>"))))
	var release map[string]any
	g.Expect(json.Unmarshal(rset.Spec.Resources[1].Raw, &release)).To(Succeed())
	g.Expect(release).To(HaveKeyWithValue("spec", HaveKeyWithValue("values",
		HaveKeyWithValue("replicaCount", "<< inputs.app.replicas | int >>"))))

	g.Expect(rset.IsDisabled()).To(BeFalse())
	g.Expect(rset.GetInterval()).To(Equal(30 * time.Minute))
	g.Expect(rset.GetTimeout()).To(Equal(5 * time.Minute))
	g.Expect(rset.GetInputStrategy()).To(Equal(rsv1.InputStrategyFlatten))

	out, err = kubectl(t, "", "delete", "resourceset", "podinfo", "-n", "default")
	g.Expect(err).NotTo(HaveOccurred(), out)
}

func TestResourceSetInputsFrom(t *testing.T) {
	ns := env.Namespace(t)
	cases := []struct {
		name, inputsFrom, rejected string
	}{
		{name: "name and selector", rejected: "exactly one of name or selector must be set", inputsFrom: `
    - kind: ResourceSetInputProvider
      name: podinfo-pull-requests
      selector:
        matchLabels:
          app: podinfo`},
		{name: "neither name nor selector", rejected: "exactly one of name or selector must be set", inputsFrom: `
    - kind: ResourceSetInputProvider`},
		{name: "another kind", rejected: `spec.inputsFrom[0].kind: Unsupported value: "ResourceSetInputsProvider"`, inputsFrom: `
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSetInputsProvider
      name: podinfo-pull-requests`},
		{name: "another apiVersion", rejected: `spec.inputsFrom[0].apiVersion: Unsupported value`, inputsFrom: `
    - apiVersion: fluxcd.controlplane.io/v2
      kind: ResourceSetInputProvider
      name: podinfo-pull-requests`},
		{name: "by name", inputsFrom: `
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSetInputProvider
      name: podinfo-pull-requests`},
		{name: "by selector", inputsFrom: `
    - kind: ResourceSetInputProvider
      selector:
        matchLabels:
          app: podinfo`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "inputs-from-" + string(rune('a'+i))
			err := createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: `+name+`
spec:
  inputsFrom:`+tc.inputsFrom)
			if tc.rejected != "" {
				expectRejected(g, err, tc.rejected)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			got := &rsv1.ResourceSet{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
			g.Expect(got.Spec.InputsFrom).To(HaveLen(1))
			g.Expect(got.Spec.InputsFrom[0].APIVersion).To(Equal("fluxcd.controlplane.io/v1"), "defaulted")
			g.Expect(got.Spec.InputsFrom[0].Kind).To(Equal(rsv1.ResourceSetInputProviderKind))
		})
	}
}

func TestResourceSetInputStrategy(t *testing.T) {
	ns := env.Namespace(t)
	cases := []struct {
		name, strategy, want, rejected string
	}{
		{name: "permute", strategy: `{name: Permute}`, want: rsv1.InputStrategyPermute},
		{name: "defaults to flatten", strategy: `{}`, want: rsv1.InputStrategyFlatten},
		{name: "unknown", strategy: `{name: Random}`, rejected: `spec.inputStrategy.name: Unsupported value: "Random"`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "strategy-" + string(rune('a'+i))
			err := createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: `+name+`
spec:
  inputStrategy: `+tc.strategy)
			if tc.rejected != "" {
				expectRejected(g, err, tc.rejected)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			got := &rsv1.ResourceSet{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
			g.Expect(got.Spec.InputStrategy.Name).To(Equal(tc.want))
			g.Expect(got.GetInputStrategy()).To(Equal(tc.want))
		})
	}
}

func TestResourceSetDependsOn(t *testing.T) {
	ns := env.Namespace(t)
	cases := []struct {
		name, dependsOn, rejected string
	}{
		{name: "missing kind", rejected: `spec.dependsOn[0].kind: Required value`, dependsOn: `
    - apiVersion: apiextensions.k8s.io/v1
      name: helmreleases.helm.toolkit.fluxcd.io`},
		{name: "empty kind", rejected: `spec.dependsOn[0].kind`, dependsOn: `
    - apiVersion: apiextensions.k8s.io/v1
      kind: ""
      name: helmreleases.helm.toolkit.fluxcd.io`},
		{name: "missing apiVersion", rejected: `spec.dependsOn[0].apiVersion: Required value`, dependsOn: `
    - kind: CustomResourceDefinition
      name: helmreleases.helm.toolkit.fluxcd.io`},
		{name: "missing name", rejected: `spec.dependsOn[0].name: Required value`, dependsOn: `
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition`},
		// The dependencies example of the documentation.
		{name: "documented example", dependsOn: `
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      name: helmreleases.helm.toolkit.fluxcd.io
      ready: true
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      name: servicemonitors.monitoring.coreos.com
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSet
      name: cluster-addons
      namespace: flux-system
      ready: true
    - apiVersion: cluster.x-k8s.io/v1beta1
      kind: Cluster
      name: my-cluster
      namespace: dev
      ready: true
      readyExpr: |
        metadata.generation == status.observedGeneration &&
        status.controlPlaneReady == true`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "depends-on-" + string(rune('a'+i))
			err := createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: `+name+`
spec:
  dependsOn:`+tc.dependsOn)
			if tc.rejected != "" {
				expectRejected(g, err, tc.rejected)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			got := &rsv1.ResourceSet{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
			g.Expect(got.Spec.DependsOn).To(HaveLen(4))
			g.Expect(got.Spec.DependsOn[2]).To(Equal(rsv1.Dependency{APIVersion: "fluxcd.controlplane.io/v1",
				Kind: "ResourceSet", Name: "cluster-addons", Namespace: "flux-system", Ready: true}))
			g.Expect(got.Spec.DependsOn[3].ReadyExpr).To(ContainSubstring("status.controlPlaneReady == true"))
		})
	}
}

// Every entry of spec.resources is an object; a string or a list is refused at admission.
func TestResourceSetResourcesAreObjects(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	err := createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: not-an-object
spec:
  resources:
    - "apiVersion: v1"`)
	expectRejected(g, err, `spec.resources[0]: Invalid value: "string"`)
}

// The template, service account, wait and gates of the documentation examples round-trip.
func TestResourceSetSpecFields(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: bundles
  annotations:
    fluxcd.controlplane.io/reconcile: disabled
    fluxcd.controlplane.io/reconcileEvery: soon
spec:
  commonMetadata:
    annotations:
      fluxcd.controlplane.io/prune: disabled
  inputs:
    - bundle: apps
      decryption: true
      components: [frontend, backend]
  resourcesTemplate: |
    ---
    apiVersion: source.toolkit.fluxcd.io/v1beta2
    kind: OCIRepository
    metadata:
      name: << inputs.bundle >>
    <<- range $component := inputs.components >>
    ---
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    metadata:
      name: << $component >>
    <<- end >>
  serviceAccountName: flux
  wait: true
  gates:
    refs: [change-freeze]
`)).To(Succeed())
	got := &rsv1.ResourceSet{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bundles"}, got)).To(Succeed())
	g.Expect(got.Spec.CommonMetadata.Annotations).To(HaveKeyWithValue(rsv1.PruneAnnotation, rsv1.DisabledValue))
	g.Expect(string(got.Spec.Inputs[0]["components"].Raw)).To(Equal(`["frontend","backend"]`))
	g.Expect(string(got.Spec.Inputs[0]["decryption"].Raw)).To(Equal(`true`))
	g.Expect(got.Spec.ResourcesTemplate).To(ContainSubstring("<<- range $component := inputs.components >>\n---\n"))
	g.Expect(got.Spec.ServiceAccountName).To(Equal("flux"))
	g.Expect(got.Spec.Wait).To(BeTrue())
	g.Expect(got.GetGates().Refs).To(Equal([]string{"change-freeze"}))
	g.Expect(string(got.GetGates().Require)).To(Equal("all"), "defaulted by the shared gates schema")
	g.Expect(got.IsDisabled()).To(BeTrue())
	g.Expect(got.GetInterval()).To(Equal(time.Hour), "an invalid reconcileEvery falls back to the default")
}

// The controller records the inventory and revision in status; an inventory without entries is
// kept as such.
func TestResourceSetStatusRoundTrips(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	rset := &rsv1.ResourceSet{}
	rset.Namespace, rset.Name = ns, "status"
	g.Expect(env.Client.Create(ctx, rset)).To(Succeed())

	rset.Status.Inventory = &rsv1.ResourceInventory{}
	g.Expect(env.Client.Status().Update(ctx, rset)).To(Succeed())

	rset.Status.ObservedGeneration = rset.Generation
	rset.Status.LastAppliedRevision = "sha256:0123"
	rset.Status.LastHandledReconcileAt = "2024-09-24T09:58:00Z"
	rset.Status.Inventory = &rsv1.ResourceInventory{Entries: []rsv1.ResourceRef{
		{ID: "default_podinfo__ServiceAccount", Version: "v1"},
		{ID: "default_podinfo_apps_Deployment", Version: "v1"},
	}}
	g.Expect(env.Client.Status().Update(ctx, rset)).To(Succeed())

	got := &rsv1.ResourceSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rset), got)).To(Succeed())
	g.Expect(got.Status).To(Equal(rset.Status))
}
