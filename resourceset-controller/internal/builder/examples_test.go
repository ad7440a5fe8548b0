package builder

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestBuildDocExamples renders every example of the ResourceSet spec and
// checks the objects it implies, field by field and type by type.
func TestBuildDocExamples(t *testing.T) {
	cases := []struct {
		name              string
		inputs            string
		resources         string
		resourcesTemplate string
		common            *CommonMetadata
		want              string
	}{
		{
			name: "podinfo tenants",
			inputs: `
- tenant: "team1"
  app:
    version: "6.7.x"
    replicas: 2
- tenant: "team2"
  app:
    version: "6.6.x"
    replicas: 3
`,
			resources: `
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
`,
			common: &CommonMetadata{Labels: map[string]string{"app.kubernetes.io/name": "podinfo"}},
			want: `
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: podinfo-team1
  namespace: default
  labels:
    app.kubernetes.io/name: podinfo
spec:
  interval: 10m
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref:
    semver: "6.7.x"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-team1
  namespace: default
  labels:
    app.kubernetes.io/name: podinfo
spec:
  interval: 1h
  releaseName: podinfo-team1
  chartRef:
    kind: OCIRepository
    name: podinfo-team1
  values:
    replicaCount: 2
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: podinfo-team2
  namespace: default
  labels:
    app.kubernetes.io/name: podinfo
spec:
  interval: 10m
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref:
    semver: "6.6.x"
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-team2
  namespace: default
  labels:
    app.kubernetes.io/name: podinfo
spec:
  interval: 1h
  releaseName: podinfo-team2
  chartRef:
    kind: OCIRepository
    name: podinfo-team2
  values:
    replicaCount: 3
`,
		},
		{
			name: "tenant RBAC",
			inputs: `
- tenant: team1
  role: admin
- tenant: team2
  role: cluster-admin
`,
			resources: `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
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
`,
			want: `
apiVersion: v1
kind: Namespace
metadata:
  name: team1
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: flux
  namespace: team1
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: flux
  namespace: team1
subjects:
  - kind: ServiceAccount
    name: flux
    namespace: team1
roleRef:
  kind: ClusterRole
  name: admin
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: v1
kind: Namespace
metadata:
  name: team2
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: flux
  namespace: team2
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: flux
  namespace: team2
subjects:
  - kind: ServiceAccount
    name: flux
    namespace: team2
roleRef:
  kind: ClusterRole
  name: cluster-admin
  apiGroup: rbac.authorization.k8s.io
`,
		},
		{
			name: "shared source is applied once",
			inputs: `
- tenant: "team1"
  replicas: "2"
- tenant: "team2"
  replicas: "3"
`,
			resources: `
- apiVersion: source.toolkit.fluxcd.io/v1beta2
  kind: OCIRepository
  metadata:
    name: podinfo
    namespace: default
  spec:
    interval: 10m
    url: oci://ghcr.io/stefanprodan/charts/podinfo
    ref:
      semver: '*'
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
      name: podinfo
    values:
      replicaCount: << inputs.replicas | int >>
`,
			want: `
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: podinfo
  namespace: default
spec:
  interval: 10m
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref:
    semver: '*'
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-team1
  namespace: default
spec:
  interval: 1h
  releaseName: podinfo-team1
  chartRef:
    kind: OCIRepository
    name: podinfo
  values:
    replicaCount: 2
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-team2
  namespace: default
spec:
  interval: 1h
  releaseName: podinfo-team2
  chartRef:
    kind: OCIRepository
    name: podinfo
  values:
    replicaCount: 3
`,
		},
		{
			name: "conditional exclusion",
			inputs: `
- tenant: "team1"
- tenant: "team2"
`,
			resources: `
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: flux
    namespace: << inputs.tenant >>
    annotations:
      fluxcd.controlplane.io/reconcile: << if eq inputs.tenant "team1" >>enabled<< else >>disabled<< end >>
`,
			want: `
apiVersion: v1
kind: Namespace
metadata:
  name: team1
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: flux
  namespace: team1
  annotations:
    fluxcd.controlplane.io/reconcile: enabled
---
apiVersion: v1
kind: Namespace
metadata:
  name: team2
`,
		},
		{
			name: "nested field via toYaml and nindent",
			inputs: `
- tenant: team1
  layerSelector:
    mediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
    operation: copy
`,
			resources: `
- apiVersion: source.toolkit.fluxcd.io/v1beta2
  kind: OCIRepository
  metadata:
    name: << inputs.tenant >>
  spec:
    layerSelector: << inputs.layerSelector | toYaml | nindent 4 >>
`,
			want: `
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: team1
spec:
  layerSelector:
    mediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
    operation: copy
`,
		},
		{
			name: "resourcesTemplate with range and if",
			inputs: `
- bundle: addons
  decryption: false
  components:
    - ingress-nginx
    - cert-manager
- bundle: apps
  decryption: true
  components:
    - frontend
    - backend
`,
			resourcesTemplate: `
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: << inputs.bundle >>
  namespace: flux-system
spec:
  interval: 10m
  url: oci://registry.example.com/<< inputs.bundle >>
<<- range $component := inputs.components >>
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: << $component >>
  namespace: flux-system
spec:
  interval: 1h
  prune: true
  <<- if inputs.decryption >>
  decryption:
    provider: sops
    secretRef:
      name: << inputs.bundle >>-sops
  <<- end >>
  sourceRef:
    kind: OCIRepository
    name: << inputs.bundle >>
  path: ./<< $component >>
<<- end >>
`,
			want: `
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: addons
  namespace: flux-system
spec:
  interval: 10m
  url: oci://registry.example.com/addons
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ingress-nginx
  namespace: flux-system
spec:
  interval: 1h
  prune: true
  sourceRef:
    kind: OCIRepository
    name: addons
  path: ./ingress-nginx
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cert-manager
  namespace: flux-system
spec:
  interval: 1h
  prune: true
  sourceRef:
    kind: OCIRepository
    name: addons
  path: ./cert-manager
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  url: oci://registry.example.com/apps
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: frontend
  namespace: flux-system
spec:
  interval: 1h
  prune: true
  decryption:
    provider: sops
    secretRef:
      name: apps-sops
  sourceRef:
    kind: OCIRepository
    name: apps
  path: ./frontend
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: backend
  namespace: flux-system
spec:
  interval: 1h
  prune: true
  decryption:
    provider: sops
    secretRef:
      name: apps-sops
  sourceRef:
    kind: OCIRepository
    name: apps
  path: ./backend
`,
		},
		{
			name:   "common metadata overrides template metadata",
			inputs: `[{tenant: team1}]`,
			resources: `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: << inputs.tenant >>
    labels:
      app.kubernetes.io/name: other
      team: << inputs.tenant >>
    annotations:
      fluxcd.controlplane.io/prune: enabled
- apiVersion: v1
  kind: Namespace
  metadata:
    name: << inputs.tenant >>
`,
			common: &CommonMetadata{
				Labels:      map[string]string{"app.kubernetes.io/name": "podinfo"},
				Annotations: map[string]string{"fluxcd.controlplane.io/prune": "disabled"},
			},
			want: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: team1
  labels:
    app.kubernetes.io/name: podinfo
    team: team1
  annotations:
    fluxcd.controlplane.io/prune: disabled
---
apiVersion: v1
kind: Namespace
metadata:
  name: team1
  labels:
    app.kubernetes.io/name: podinfo
  annotations:
    fluxcd.controlplane.io/prune: disabled
`,
		},
		{
			name:   "resources take precedence over resourcesTemplate duplicates",
			inputs: `[{tenant: team1}, {tenant: team2}]`,
			resources: `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: << inputs.tenant >>-settings
    namespace: default
  data:
    from: resources
`,
			resourcesTemplate: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: << inputs.tenant >>-settings
  namespace: default
data:
  from: resourcesTemplate
---
apiVersion: v1
kind: Secret
metadata:
  name: << inputs.tenant >>-token
  namespace: default
`,
			want: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: team1-settings
  namespace: default
data:
  from: resources
---
apiVersion: v1
kind: Secret
metadata:
  name: team1-token
  namespace: default
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: team2-settings
  namespace: default
data:
  from: resources
---
apiVersion: v1
kind: Secret
metadata:
  name: team2-token
  namespace: default
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl, err := Parse(resourcesOf(t, tc.resources), tc.resourcesTemplate)
			g.Expect(err).NotTo(HaveOccurred())
			objects, err := tmpl.Build(t.Context(), inputsOf(t, tc.inputs), tc.common)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(contents(objects)).To(Equal(objectsOf(t, tc.want)))
		})
	}
}
