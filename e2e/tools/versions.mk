# Versions of the tools `make tools` builds into bin/ from the Go module proxy.
# kube-apiserver, kube-controller-manager, kubectl and etcd are pinned by go.mod beside this file
# (k8s.io/kubernetes, go.etcd.io/etcd/server/v3).
CONTROLLER_GEN_VERSION := v0.21.0
KUSTOMIZE_VERSION := v5.8.2
# Helm 4 (helm.sh/helm/v4): the newest release that builds with Go 1.26 and k8s.io v0.36 (v4.3
# needs k8s.io v0.37).
HELM_VERSION := v4.2.4
# The Kubernetes minor `helm template` renders for (.Capabilities.KubeVersion): that of the pinned
# kube-apiserver, as in the manifest-generator image. Helm 4 takes it from the k8s.io/client-go
# of its go.mod (v0.36 -> 1.36), no longer from an ldflag: a new HELM_VERSION must keep it.
HELM_KUBE_MINOR := 36
# Flux's kustomize-controller, run by the e2e consumer scenario against the source-controller: the
# newest release that builds with Go 1.26 (v1.10 needs Go 1.27). Flux's helm-controller is not
# served by the module proxy here.
KUSTOMIZE_CONTROLLER_VERSION := v1.9.6
# The API modules of Flux's helm-controller and image-automation-controller, from which `make tools`
# generates their CRDs (bin/crds/) with controller-gen: the releases of the same Flux release as
# kustomize-controller v1.9.6 (Go 1.26, fluxcd/pkg/apis/meta v1.30.2, k8s.io v0.36); helm-controller
# api v1.7 needs Go 1.27.
HELM_CONTROLLER_API_VERSION := v1.6.5
IMAGE_AUTOMATION_CONTROLLER_API_VERSION := v1.2.5
# Flux's source API module of the same release (kustomize-controller v1.9.6 requires it), for the
# ExternalArtifact CRD.
SOURCE_CONTROLLER_API_VERSION := v1.9.0
# flux-operator, whose ResourceSet API Sluice serves field for field: `make tools` copies the Go
# source of its api/v1 package into bin/ for the field walk (it needs Go 1.27, so it is read, not
# built).
FLUX_OPERATOR_VERSION := v0.59.0
# The flux CLI (github.com/fluxcd/flux2/v2), run by the e2e scenario of Flux's tools against
# Sluice's controllers; the newest release that builds with Go 1.26.
FLUX_CLI_VERSION := v2.9.5
# Versity's S3 gateway, the real object store the source-controller's replicas share artifacts
# through in the tests (shared/testserver.NewObjectStore); Go 1.25, built by go install.
VERSITYGW_VERSION := v1.8.0
# Flux's source-controller, the anchor of the side-by-side benchmarks (`make bench`): the newest
# release whose go.mod Go 1.26 builds (v1.10 needs Go 1.27, and the proxy serves none of v1.10's
# fluxcd/pkg modules).
FLUX_SOURCE_CONTROLLER_VERSION := v1.9.6
# Gitea (code.gitea.io/gitea), the real forge of shared/testserver.NewGitea: pull requests, forge
# APIs and webhooks. v1.26.0 builds with Go 1.26 from its downloaded module; v1.27 (module
# gitea.dev) needs requirements the module proxy does not serve.
GITEA_VERSION := v1.26.0
# The real node of e2e/node, built by `make node-tools`: kubelet, kube-scheduler and kube-proxy come
# from k8s.io/kubernetes in go.mod beside this file; these are the node's other parts.
CONTAINERD_VERSION := v2.4.2
RUNC_VERSION := v1.5.2
CNI_PLUGINS_VERSION := v1.10.0
# CoreDNS is built from e2e/tools/coredns, whose go.mod must require this version.
COREDNS_VERSION := v1.15.0
