package apitest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

func TestResourceSetInputProviderSpecValidation(t *testing.T) {
	ns := env.Namespace(t)
	cases := []struct {
		name, spec, rejected string
	}{
		{name: "OCIArtifactTag with an https URL", rejected: "spec.url must start with oci:// for the OCIArtifactTag type", spec: `
  type: OCIArtifactTag
  url: https://ghcr.io/stefanprodan/charts/podinfo`},
		{name: "OCIArtifactTag without a URL", rejected: "spec.url must start with oci:// for the OCIArtifactTag type", spec: `
  type: OCIArtifactTag`},
		{name: "ExternalService with an http URL", rejected: "spec.url must start with https:// for the ExternalService type", spec: `
  type: ExternalService
  url: http://inputs.example.com/tenants`},
		{name: "ExternalService with an oci URL", rejected: "spec.url must start with https:// for the ExternalService type", spec: `
  type: ExternalService
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  insecure: true`},
		{name: "Static with a URL", rejected: "spec.url must be empty for the Static type", spec: `
  type: Static
  url: https://inputs.example.com/tenants`},
		{name: "limit 0", rejected: "spec.filter.limit: Invalid value: 0", spec: `
  type: OCIArtifactTag
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  filter:
    limit: 0`},
		{name: "unknown type", rejected: `spec.type: Unsupported value: "GiteaRelease"`, spec: `
  type: GiteaRelease
  url: https://gitea.example.com/team/app`},
		{name: "GitHubPullRequest with an oci URL", rejected: "spec.url must be the http:// or https:// address of the repository for the Gitea, GitHub and GitLab types", spec: `
  type: GitHubPullRequest
  url: oci://ghcr.io/team/app`},
		{name: "GitLabBranch without a URL", rejected: "spec.url must be the http:// or https:// address of the repository", spec: `
  type: GitLabBranch`},
		{name: "GitTag with an oci URL", rejected: "spec.url must be an http://, https:// or ssh:// Git URL for the GitBranch and GitTag types", spec: `
  type: GitTag
  url: oci://ghcr.io/team/app`},
		{name: "ExternalArtifact without selectors", rejected: "spec.selectors must be set for the ExternalArtifact type", spec: `
  type: ExternalArtifact`},
		{name: "ExternalArtifact with a URL", rejected: "spec.url must be empty for the ExternalArtifact type", spec: `
  type: ExternalArtifact
  url: https://example.com
  selectors:
  - matchLabels:
      env: dev`},
		{name: "selectors on another type", rejected: "spec.selectors may only be set for the ExternalArtifact type", spec: `
  type: Static
  selectors:
  - matchLabels:
      env: dev`},
		{name: "selector by name and labels", rejected: "name is mutually exclusive with matchLabels and matchExpressions", spec: `
  type: ExternalArtifact
  selectors:
  - name: auth
    matchLabels:
      env: dev`},
		{name: "skip on branches", rejected: "spec.skip may only be set for the pull and merge request types", spec: `
  type: GiteaBranch
  url: https://gitea.example.com/team/app
  skip:
    labels: [hold]`},
		{name: "limit above 10000", rejected: "spec.filter.limit: Invalid value: 10001", spec: `
  type: GitHubBranch
  url: https://github.com/team/app
  filter:
    limit: 10001`},
		{name: "flux-operator's pull request preview", spec: `
  type: GitHubPullRequest
  url: https://github.com/controlplaneio-fluxcd/flux-appx
  secretRef:
    name: github-app
  filter:
    labels: ["deploy/flux-preview"]
    includeBranch: "^feat/"
    excludeBranch: "^feat/not-this$"
    limit: 10
  skip:
    labels: ["deploy/flux-preview-pause", "!test-ok"]
  defaultValues:
    chart: charts/flux-appx`},
		{name: "GitLabEnvironment with environment filters", spec: `
  type: GitLabEnvironment
  url: https://gitlab.com/group/subgroup/app
  filter:
    includeEnvironment: "^review/"
    excludeEnvironment: "stop"`},
		{name: "GitBranch over ssh", spec: `
  type: GitBranch
  url: ssh://git@git.example.com/team/app.git
  secretRef:
    name: git-ssh`},
		{name: "ExternalArtifact across namespaces", spec: `
  type: ExternalArtifact
  serviceAccountName: artifact-reader
  selectors:
  - namespace: "*"
    matchExpressions:
    - {key: env, operator: In, values: [dev, staging]}
  - name: auth
    namespace: apps`},
		{name: "missing type", rejected: `spec.type: Required value`, spec: `
  url: https://inputs.example.com/tenants`},
		{name: "timeout not a duration", rejected: `spec.timeout`, spec: `
  type: ExternalService
  url: https://inputs.example.com/tenants
  timeout: soon`},
		{name: "ExternalService with an http URL and insecure", spec: `
  type: ExternalService
  url: http://inputs.example.com/tenants
  insecure: true`},
		{name: "ExternalService with an https URL and credentials", spec: `
  type: ExternalService
  url: https://inputs.example.com/tenants
  secretRef:
    name: inputs-token
  certSecretRef:
    name: inputs-ca
  timeout: 30s`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: provider-`+string(rune('a'+i))+`
spec:`+tc.spec)
			if tc.rejected != "" {
				expectRejected(g, err, tc.rejected)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

func TestResourceSetInputProviderWithoutSpecRejected(t *testing.T) {
	g := NewWithT(t)
	err := createYAML(t, env.Namespace(t), `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: empty`)
	expectRejected(g, err, "spec: Required value")
}

// An OCIArtifactTag provider keeps its filter (limit defaulted) and default values.
func TestResourceSetInputProviderOCIArtifactTag(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: podinfo-tags
  annotations:
    fluxcd.controlplane.io/reconcileEvery: 5m
spec:
  type: OCIArtifactTag
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  secretRef:
    name: ghcr-auth
  filter:
    semver: ">=6.0.0"
    includeTag: "^6\\."
    excludeTag: "-rc"
  defaultValues:
    env: staging
    resources:
      limits: {cpu: 100m}
`)).To(Succeed())
	got := &rsv1.ResourceSetInputProvider{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "podinfo-tags"}, got)).To(Succeed())
	g.Expect(got.Spec.Filter).To(Equal(&rsv1.ResourceSetInputFilter{SemVer: ">=6.0.0", IncludeTag: `^6\.`, ExcludeTag: "-rc", Limit: 100}))
	g.Expect(got.GetLimit()).To(Equal(100))
	g.Expect(got.Spec.SecretRef.Name).To(Equal("ghcr-auth"))
	g.Expect(string(got.Spec.DefaultValues["env"].Raw)).To(Equal(`"staging"`))
	g.Expect(string(got.Spec.DefaultValues["resources"].Raw)).To(Equal(`{"limits":{"cpu":"100m"}}`))
	g.Expect(got.GetInterval()).To(Equal(5 * time.Minute))
	g.Expect(got.GetTimeout()).To(Equal(rsv1.DefaultTimeout))
}

// A Static provider exports its default values; the exported inputs round-trip through status.
func TestResourceSetInputProviderStaticStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: tenants
spec:
  type: Static
  defaultValues:
    tenant: team1
    app:
      version: 6.7.x
      replicas: 2
`)).To(Succeed())
	rsip := &rsv1.ResourceSetInputProvider{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenants"}, rsip)).To(Succeed())
	g.Expect(rsip.GetInterval()).To(Equal(rsv1.DefaultInputProviderInterval))

	exported := rsv1.ResourceSetInput{}
	for k, v := range rsip.Spec.DefaultValues {
		exported[k] = v
	}
	exported["id"] = &apiextensionsv1.JSON{Raw: []byte(`"48955639"`)}
	rsip.Status.ObservedGeneration = rsip.Generation
	rsip.Status.ExportedInputs = []rsv1.ResourceSetInput{exported}
	rsip.Status.LastExportedRevision = "sha256:4567"
	g.Expect(env.Client.Status().Update(ctx, rsip)).To(Succeed())

	got := &rsv1.ResourceSetInputProvider{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rsip), got)).To(Succeed())
	g.Expect(got.Status.LastExportedRevision).To(Equal("sha256:4567"))
	g.Expect(got.Status.ExportedInputs).To(HaveLen(1))
	var app map[string]any
	g.Expect(json.Unmarshal(got.Status.ExportedInputs[0]["app"].Raw, &app)).To(Succeed())
	g.Expect(app).To(Equal(map[string]any{"version": "6.7.x", "replicas": float64(2)}))
	g.Expect(string(got.Status.ExportedInputs[0]["id"].Raw)).To(Equal(`"48955639"`))
}
