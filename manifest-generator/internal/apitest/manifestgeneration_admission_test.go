package apitest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// minimalGeneration has only the required fields.
const minimalGeneration = `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: podinfo
spec:
  sourceRef:
    kind: GitRepository
    name: podinfo
  interval: 5m
`

// The API server applies the defaults: the root path, the one-minute sync timeout of the .flux.yaml
// documentation, and pruning.
func TestManifestGenerationDefaults(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, minimalGeneration)).To(Succeed())

	got := &generatorv1.ManifestGeneration{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "podinfo"}, got)).To(Succeed())
	g.Expect(got.Spec.SourceRef).To(Equal(generatorv1.SourceReference{Kind: generatorv1.GitRepositoryKind, Name: "podinfo"}))
	g.Expect(got.Spec.Path).To(Equal("./"))
	g.Expect(got.Spec.Timeout).To(BeNil(), "the controller's --sync-timeout applies")
	g.Expect(got.Spec.Prune).To(HaveValue(BeTrue()))
	g.Expect(got.Spec.Interval.Duration).To(Equal(5 * time.Minute))
	g.Expect(got.Spec.AllowEmpty).To(BeFalse())
	g.Expect(got.Spec.Wait).To(BeFalse())
	g.Expect(got.Spec.Suspend).To(BeFalse())
	g.Expect(got.GetPath()).To(Equal(generatorv1.DefaultPath))
	g.Expect(got.GetTimeout(generatorv1.DefaultTimeout)).To(Equal(time.Minute))
	g.Expect(got.GetPrune()).To(BeTrue())

	// A ManifestGeneration built in Go gets the same defaults.
	mgen := &generatorv1.ManifestGeneration{Spec: generatorv1.ManifestGenerationSpec{
		SourceRef: generatorv1.SourceReference{Kind: generatorv1.OCIRepositoryKind, Name: "manifests"},
		Interval:  metav1.Duration{Duration: time.Hour},
	}}
	mgen.Namespace, mgen.Name = ns, "from-go"
	g.Expect(env.Client.Create(context.Background(), mgen)).To(Succeed())
	g.Expect(mgen.Spec.Path).To(Equal("./"))
	g.Expect(mgen.Spec.Timeout).To(BeNil())
	g.Expect(mgen.Spec.Prune).To(HaveValue(BeTrue()))
}

// Every field of the spec round-trips; an explicit prune: false is kept.
func TestManifestGenerationSpecFields(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: staging
spec:
  sourceRef:
    apiVersion: source.toolkit.fluxcd.io/v1beta2
    kind: OCIRepository
    name: fleet
  path: ./clusters/staging
  interval: 1h30m
  timeout: 2m30s
  prune: false
  allowEmpty: true
  wait: true
  serviceAccountName: deployer
  suspend: true
  env:
    - name: CLUSTER
      value: staging
    - name: _DEBUG
  gates:
    refs: [change-freeze, flux-system/bypass-signoff]
    require: oneOf
`)).To(Succeed())
	got := &generatorv1.ManifestGeneration{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "staging"}, got)).To(Succeed())
	g.Expect(got.Spec.SourceRef).To(Equal(generatorv1.SourceReference{APIVersion: "source.toolkit.fluxcd.io/v1beta2",
		Kind: generatorv1.OCIRepositoryKind, Name: "fleet"}))
	g.Expect(got.GetPath()).To(Equal("./clusters/staging"))
	g.Expect(got.GetInterval()).To(Equal(90 * time.Minute))
	g.Expect(got.GetTimeout(generatorv1.DefaultTimeout)).To(Equal(150 * time.Second))
	g.Expect(got.Spec.Prune).To(HaveValue(BeFalse()))
	g.Expect(got.GetPrune()).To(BeFalse())
	g.Expect(got.Spec.AllowEmpty).To(BeTrue())
	g.Expect(got.Spec.Wait).To(BeTrue())
	g.Expect(got.Spec.ServiceAccountName).To(Equal("deployer"))
	g.Expect(got.Spec.Suspend).To(BeTrue())
	g.Expect(got.Spec.Env).To(Equal([]generatorv1.EnvVar{{Name: "CLUSTER", Value: "staging"}, {Name: "_DEBUG"}}))
	g.Expect(got.GetGates().Refs).To(Equal([]string{"change-freeze", "flux-system/bypass-signoff"}))
	g.Expect(string(got.GetGates().Require)).To(Equal("oneOf"))
}

func TestManifestGenerationSpecValidation(t *testing.T) {
	ns := env.Namespace(t)
	cases := []struct {
		name, spec, rejected string
	}{
		{name: "Bucket source", rejected: `spec.sourceRef.kind: Unsupported value: "Bucket"`, spec: `
  sourceRef: {kind: Bucket, name: podinfo}
  interval: 5m`},
		{name: "HelmChart source", rejected: `spec.sourceRef.kind: Unsupported value: "HelmChart"`, spec: `
  sourceRef: {kind: HelmChart, name: podinfo}
  interval: 5m`},
		{name: "source without a name", rejected: `spec.sourceRef.name: Required value`, spec: `
  sourceRef: {kind: GitRepository}
  interval: 5m`},
		{name: "no source", rejected: `spec.sourceRef: Required value`, spec: `
  interval: 5m`},
		{name: "no interval", rejected: `spec.interval: Required value`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}`},
		{name: "interval not a duration", rejected: `spec.interval`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5 minutes`},
		{name: "timeout in hours", rejected: `spec.timeout`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  timeout: 1h`},
		{name: "env PATH", rejected: "PATH and HOME are set by the controller and cannot be overridden in spec.env", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  env:
    - name: PATH
      value: /tmp/bin`},
		{name: "env FLUX_", rejected: "FLUX_ variables carry the update request to updaters and cannot be set in spec.env", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  env:
    - name: FLUX_IMG
      value: evil`},
		{name: "env HOME", rejected: "PATH and HOME are set by the controller and cannot be overridden in spec.env", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  env:
    - name: HOME
      value: /tmp`},
		{name: "env name not an identifier", rejected: `spec.env[0].name: Invalid value: "MY-VAR"`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  env:
    - name: MY-VAR
      value: x`},
		{name: "env name starting with a digit", rejected: `spec.env[0].name: Invalid value: "1VAR"`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  env:
    - name: 1VAR`},
		{name: "env name twice", rejected: `spec.env[1]: Duplicate value`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  env:
    - {name: CLUSTER, value: a}
    - {name: CLUSTER, value: b}`},
		{name: "absolute path", rejected: "spec.path must be relative to the root of the source, without .. elements", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  path: /etc`},
		{name: "path leaving the source", rejected: "spec.path must be relative to the root of the source, without .. elements", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  path: ./apps/../../etc`},
		{name: "path ..", rejected: "spec.path must be relative to the root of the source, without .. elements", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  path: ..`},
		{name: "path with dots in names", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  path: ./apps/..staging/v1..2/.hidden`},
		{name: "automation grouped by workload", rejected: `spec.automation.group: Unsupported value: "perWorkload"`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  automation: {group: perWorkload}`},
		{name: "automation minimum age in days", rejected: `spec.automation.minimumAge`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  automation: {minimumAge: 2d}`},
		{name: "automation verify without keys", rejected: `spec.automation.verify.secretRef: Required value`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  automation: {verify: {provider: cosign}}`},
		{name: "automation verify by notation", rejected: `spec.automation.verify.provider: Unsupported value: "notation"`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  automation: {verify: {provider: notation, secretRef: {name: keys}}}`},
		{name: "automation pull request without a provider", rejected: `spec.automation.pullRequest.provider: Required value`, spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  automation: {pullRequest: {branch: releases}}`},
		{name: "automation with every release policy", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  automation:
    minimumAge: 24h
    group: perScan
    verify: {secretRef: {name: cosign-keys}}
    git: {author: {name: Release Bot}, signingKey: {secretRef: {name: release-key}}}
    pullRequest: {provider: github, secretRef: {name: github-token}}`},
		{name: "OCIRepository source", spec: `
  sourceRef: {kind: OCIRepository, name: podinfo}
  interval: 10m
  timeout: 90s`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := createYAML(t, ns, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: generation-`+string(rune('a'+i))+`
spec:`+tc.spec)
			if tc.rejected != "" {
				expectRejected(g, err, tc.rejected)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

// A source in another namespace and variables from Secrets are not part of the API: kubectl
// refuses them (strict field validation) instead of dropping them silently.
func TestManifestGenerationUnknownFieldsRefused(t *testing.T) {
	ns := env.Namespace(t)
	for _, tc := range []struct{ name, spec, field string }{
		{name: "source namespace", field: "spec.sourceRef.namespace", spec: `
  sourceRef: {kind: GitRepository, name: podinfo, namespace: flux-system}
  interval: 5m`},
		{name: "env valueFrom", field: "spec.env[0].valueFrom", spec: `
  sourceRef: {kind: GitRepository, name: podinfo}
  interval: 5m
  env:
    - name: TOKEN
      valueFrom: {secretKeyRef: {name: token, key: token}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := kubectl(t, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: unknown-field
spec:`+tc.spec, "apply", "-n", ns, "-f", "-")
			g.Expect(err).To(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(`unknown field "` + tc.field + `"`))
		})
	}
}

func TestManifestGenerationWithoutSpecRejected(t *testing.T) {
	g := NewWithT(t)
	err := createYAML(t, env.Namespace(t), `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: empty`)
	expectRejected(g, err, "spec: Required value")
}

// The controller records revisions, the .flux.yaml used and the inventory in status; an inventory
// without entries is kept as such.
func TestManifestGenerationStatusRoundTrips(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, minimalGeneration)).To(Succeed())
	mgen := &generatorv1.ManifestGeneration{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, mgen)).To(Succeed())

	mgen.Status.Inventory = &generatorv1.ResourceInventory{}
	g.Expect(env.Client.Status().Update(ctx, mgen)).To(Succeed())

	mgen.Status.ObservedGeneration = mgen.Generation
	mgen.Status.LastAppliedRevision = "main@sha1:4d5c2a1"
	mgen.Status.LastAttemptedRevision = "main@sha1:9f3e1b2"
	mgen.Status.ConfigFile = "staging/.flux.yaml"
	mgen.Status.LastHandledReconcileAt = "2024-09-24T09:58:00Z"
	mgen.Status.Inventory = &generatorv1.ResourceInventory{Entries: []generatorv1.ResourceRef{
		{ID: "default_podinfo__Service", Version: "v1"},
		{ID: "default_podinfo_apps_Deployment", Version: "v1"},
	}}
	g.Expect(env.Client.Status().Update(ctx, mgen)).To(Succeed())

	got := &generatorv1.ManifestGeneration{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(mgen), got)).To(Succeed())
	g.Expect(got.Status).To(Equal(mgen.Status))

	// Raw mode: no .flux.yaml.
	got.Status.ConfigFile = ""
	g.Expect(env.Client.Status().Update(ctx, got)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(mgen), got)).To(Succeed())
	g.Expect(got.Status.ConfigFile).To(BeEmpty())
}
