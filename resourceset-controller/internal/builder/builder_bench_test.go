package builder

import (
	"bytes"
	"fmt"
	"testing"
	"text/template"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// benchResources is a realistic tenant: ten objects, most fields static, the
// names, namespaces and a few typed values templated.
const benchResources = `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
    labels:
      toolkit.fluxcd.io/tenant: << inputs.tenant | slugify >>
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: flux
    namespace: << inputs.tenant >>
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata:
    name: flux
    namespace: << inputs.tenant >>
  subjects:
    - kind: ServiceAccount
      name: flux
      namespace: << inputs.tenant >>
  roleRef:
    kind: ClusterRole
    name: << inputs.role >>
    apiGroup: rbac.authorization.k8s.io
- apiVersion: v1
  kind: ResourceQuota
  metadata:
    name: quota
    namespace: << inputs.tenant >>
  spec:
    hard:
      pods: << inputs.quota.pods | quote >>
      requests.cpu: << inputs.quota.cpu | quote >>
- apiVersion: source.toolkit.fluxcd.io/v1beta2
  kind: OCIRepository
  metadata:
    name: podinfo
    namespace: << inputs.tenant >>
  spec:
    interval: 10m
    url: oci://ghcr.io/stefanprodan/charts/podinfo
    ref:
      semver: << inputs.app.version | quote >>
    layerSelector:
      mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
      operation: copy
- apiVersion: helm.toolkit.fluxcd.io/v2
  kind: HelmRelease
  metadata:
    name: podinfo
    namespace: << inputs.tenant >>
  spec:
    interval: 1h
    releaseName: podinfo-<< inputs.tenant >>
    serviceAccountName: flux
    chartRef:
      kind: OCIRepository
      name: podinfo
    install:
      remediation:
        retries: 3
    values:
      replicaCount: << inputs.app.replicas | int >>
      ingress:
        enabled: << inputs.app.ingress | bool >>
        hosts:
          - host: << inputs.tenant >>.example.com
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: settings
    namespace: << inputs.tenant >>
  data:
    tenant: << inputs.tenant | quote >>
    role: << inputs.role | quote >>
    owner: team-<< inputs.tenant >>@example.com
    region: eu-west-1
- apiVersion: networking.k8s.io/v1
  kind: NetworkPolicy
  metadata:
    name: deny-cross-tenant
    namespace: << inputs.tenant >>
  spec:
    podSelector: {}
    ingress:
      - from:
          - namespaceSelector:
              matchLabels:
                toolkit.fluxcd.io/tenant: << inputs.tenant | slugify >>
- apiVersion: kustomize.toolkit.fluxcd.io/v1
  kind: Kustomization
  metadata:
    name: apps
    namespace: << inputs.tenant >>
  spec:
    interval: 1h
    prune: true
    serviceAccountName: flux
    path: ./tenants/<< inputs.tenant >>
    sourceRef:
      kind: OCIRepository
      name: podinfo
- apiVersion: notification.toolkit.fluxcd.io/v1beta3
  kind: Alert
  metadata:
    name: on-call
    namespace: << inputs.tenant >>
    annotations:
      fluxcd.controlplane.io/reconcile: << if inputs.app.ingress | bool >>enabled<< else >>disabled<< end >>
  spec:
    providerRef:
      name: slack
    eventSeverity: error
    eventSources:
      - kind: HelmRelease
        name: podinfo
`

func benchInputs(n int) []Input {
	inputs := make([]Input, n)
	for i := range inputs {
		inputs[i] = Input{
			"tenant": fmt.Sprintf("team%d", i),
			"role":   "admin",
			"quota":  map[string]any{"pods": float64(10 + i%5), "cpu": "4"},
			"app": map[string]any{
				"version":  "6.7.x",
				"replicas": float64(1 + i%3),
				"ingress":  "true",
			},
		}
	}
	return inputs
}

// naiveBuild is what the builder replaces: every input re-parses every
// resource template (as YAML text) and decodes the whole rendered document.
// The JSON to YAML conversion is done once per call, not per input, to keep
// the baseline honest.
func naiveBuild(resources [][]byte, inputs []Input) ([]*unstructured.Unstructured, error) {
	texts := make([]string, len(resources))
	for i, raw := range resources {
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return nil, err
		}
		texts[i] = string(y)
	}
	out := newDedup()
	var buf bytes.Buffer
	for i, text := range texts {
		for _, in := range inputs {
			bound := template.FuncMap{inputsFunc: func() map[string]any { return in }}
			tmpl, err := template.New(fmt.Sprintf("resources[%d]", i)).
				Delims(leftDelim, rightDelim).Option("missingkey=error").
				Funcs(funcs).Funcs(bound).Parse(text)
			if err != nil {
				return nil, err
			}
			buf.Reset()
			if err := tmpl.Execute(&buf, nil); err != nil {
				return nil, err
			}
			j, err := yaml.YAMLToJSON(buf.Bytes())
			if err != nil {
				return nil, err
			}
			var obj map[string]any
			if err := utiljson.Unmarshal(j, &obj); err != nil {
				return nil, err
			}
			u := &unstructured.Unstructured{Object: obj}
			if !isDisabled(u) {
				out.add(u, 0)
			}
		}
	}
	return out.objects, nil
}

// TestNaiveBuilderAgrees makes sure both benchmarks do the same work.
func TestNaiveBuilderAgrees(t *testing.T) {
	g := NewWithT(t)
	resources := resourcesOf(t, benchResources)
	g.Expect(resources).To(HaveLen(10))
	inputs := benchInputs(20)
	inputs[3]["app"].(map[string]any)["ingress"] = "false" // exercise the disabled Alert

	tmpl, err := Parse(resources, "")
	g.Expect(err).NotTo(HaveOccurred())
	ours, err := tmpl.Build(t.Context(), inputs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	naive, err := naiveBuild(resources, inputs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ours).To(HaveLen(20*10 - 1))
	g.Expect(contents(ours)).To(Equal(contents(naive)))
}

func BenchmarkBuild1000Inputs10Resources(b *testing.B) {
	resources := resourcesOf(b, benchResources)
	inputs := benchInputs(1000)
	tmpl, err := Parse(resources, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		objects, err := tmpl.Build(b.Context(), inputs, nil)
		if err != nil || len(objects) != 10000 {
			b.Fatalf("got %d objects, err %v", len(objects), err)
		}
	}
}

func BenchmarkNaivePerInputParse(b *testing.B) {
	resources := resourcesOf(b, benchResources)
	inputs := benchInputs(1000)
	b.ReportAllocs()
	for b.Loop() {
		objects, err := naiveBuild(resources, inputs)
		if err != nil || len(objects) != 10000 {
			b.Fatalf("got %d objects, err %v", len(objects), err)
		}
	}
}
