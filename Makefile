# Sluice: `make dev` runs the system locally, `make test` runs every test.
SHELL := /usr/bin/env bash -o pipefail
export GOTOOLCHAIN := local

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
MODULES := shared source-controller gating-controller resourceset-controller manifest-generator e2e
CONTROLLERS := source-controller gating-controller resourceset-controller manifest-generator

include e2e/tools/versions.mk

CONTROLLER_GEN := $(BIN)/controller-gen
KUSTOMIZE := $(BIN)/kustomize
HELM := $(BIN)/helm
KUBE_APISERVER := $(BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(BIN)/kube-controller-manager
KUSTOMIZE_CONTROLLER := $(BIN)/kustomize-controller
# The flux CLI, run against Sluice's controllers by e2e/scenarios/flux_cli_test.go.
FLUX_CLI := $(BIN)/flux
# CRDs of Flux kinds whose controllers are not built here, generated from their API modules.
HELMRELEASE_CRD := $(BIN)/crds/helm.toolkit.fluxcd.io_helmreleases.yaml
IMAGEUPDATEAUTOMATION_CRD := $(BIN)/crds/image.toolkit.fluxcd.io_imageupdateautomations.yaml
# Flux's ExternalArtifact, which ExternalArtifact input providers read.
EXTERNALARTIFACT_CRD := $(BIN)/crds/source.toolkit.fluxcd.io_externalartifacts.yaml
# The source of flux-operator's api/v1 package, whose fields resourceset-controller's field walk
# compares with its own (resourceset-controller/api/v1/fieldwalk_test.go).
FLUX_OPERATOR_API := $(BIN)/flux-operator-api/v1/resourceset_types.go
# flux-operator's golden tests of `flux-operator build resourceset` (cmd/cli/testdata of its module),
# which resourceset-controller/cmd/kubectl-resourceset/fluxoperator_golden_test.go runs against
# `kubectl resourceset build`.
FLUX_OPERATOR_GOLDEN := $(BIN)/flux-operator-testdata/build_resourceset/golden.yaml
# Gitea, the forge of shared/testserver.NewGitea, and the files it reads from disk.
GITEA := $(BIN)/gitea
GITEA_DATA := $(BIN)/gitea-data
# Versity's S3 gateway, the object store of shared/testserver.NewObjectStore.
VERSITYGW := $(BIN)/versitygw
# Flux's source-controller, the anchor of the side-by-side benchmarks (`make bench` only).
FLUX_SOURCE_CONTROLLER := $(BIN)/flux-source-controller
KUBECTL := $(BIN)/kubectl
ETCD := $(BIN)/etcd
# The real node's parts (e2e/node), built by `make node-tools`.
KUBELET := $(BIN)/kubelet
KUBE_SCHEDULER := $(BIN)/kube-scheduler
KUBE_PROXY := $(BIN)/kube-proxy
CONTAINERD := $(BIN)/containerd
CTR := $(BIN)/ctr
CONTAINERD_SHIM := $(BIN)/containerd-shim-runc-v2
RUNC := $(BIN)/runc
CNI_PLUGINS := $(addprefix $(BIN)/cni/,bridge host-local loopback portmap)
COREDNS := $(BIN)/coredns
NODE_TOOLS := $(KUBELET) $(KUBE_SCHEDULER) $(KUBE_PROXY) $(CONTAINERD) $(CTR) $(CONTAINERD_SHIM) $(RUNC) $(CNI_PLUGINS) $(COREDNS)
TOOLS := $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL) $(ETCD) $(CONTROLLER_GEN) $(KUSTOMIZE) $(HELM) $(KUSTOMIZE_CONTROLLER) $(FLUX_CLI) \
	$(HELMRELEASE_CRD) $(IMAGEUPDATEAUTOMATION_CRD) $(EXTERNALARTIFACT_CRD) $(FLUX_OPERATOR_API) $(FLUX_OPERATOR_GOLDEN) $(GITEA) $(VERSITYGW)

GO_TEST_FLAGS ?= -count=1 -timeout 20m

.PHONY: all tools node-tools tools-both-chains tools-chain-kubernetes tools-chain-other test-node generate check-generated build images test test-modules test-race lint dev cluster bench fuzz clean

all: build

## tools: build the pinned test and generation tools into bin/ (only those missing)
tools: $(TOOLS)

# k8s.io/kubernetes is not go-installable (its go.mod maps staging modules to ./staging), so its
# commands build from the small module in e2e/tools whose go.mod replaces them with the published
# releases; the ldflags make `--version` report the pinned release, and leave out the symbol table
# and DWARF (-s -w, as Kubernetes' release builds do), which halves each link (kube-proxy: 19 s
# to 9 s with the packages built).
KUBE_BUILD = cd e2e/tools && v=$$(GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes) && \
	minor=$$(echo $$v | cut -d. -f2) && GOWORK=off GONOSUMDB=k8s.io go build -o $@ -ldflags "-s -w \
	  -X k8s.io/component-base/version.gitVersion=$$v -X k8s.io/component-base/version.gitMajor=1 \
	  -X k8s.io/component-base/version.gitMinor=$$minor -X k8s.io/client-go/pkg/version.gitVersion=$$v"

$(KUBE_APISERVER):
	$(KUBE_BUILD) k8s.io/kubernetes/cmd/kube-apiserver

# Its namespace and garbage-collector controllers finish deletions: without them a deleted
# namespace stays Terminating and dependents of a deleted owner stay.
$(KUBE_CONTROLLER_MANAGER):
	$(KUBE_BUILD) k8s.io/kubernetes/cmd/kube-controller-manager

$(KUBECTL):
	$(KUBE_BUILD) k8s.io/kubernetes/cmd/kubectl

$(ETCD):
	cd e2e/tools && GOWORK=off GONOSUMDB=k8s.io go build -o $@ ./etcd

# Flux's kustomize-controller, the consumer of the e2e scenarios: its go.mod has replace
# directives (its api module beside it), so it builds in a copy of the two modules as the proxy
# serves them, not by go install. Static, as Flux builds it: e2e/images makes an image of it. Its
# CRD (config/crd/bases of the module) goes beside the binary.
$(KUSTOMIZE_CONTROLLER):
	set -e; moddir() { cd /tmp && GOFLAGS=-mod=mod go mod download -json $$1@$(KUSTOMIZE_CONTROLLER_VERSION) | \
	  sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'; }; \
	  main=$$(moddir github.com/fluxcd/kustomize-controller); api=$$(moddir github.com/fluxcd/kustomize-controller/api); \
	  tmp=$$(mktemp -d); trap 'chmod -R u+w '$$tmp'; rm -rf '$$tmp EXIT; \
	  cp -r $$main/. $$tmp; mkdir -p $$tmp/api; cp -r $$api/. $$tmp/api; chmod -R u+w $$tmp; \
	  cd $$tmp && CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go build -o $@ \
	  -ldflags "-X main.VERSION=$(KUSTOMIZE_CONTROLLER_VERSION)" . && \
	  mkdir -p $(BIN)/crds && cp config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml $(BIN)/crds/

# The flux CLI builds from a writable copy of its module: its cmd/flux/manifests (the install
# manifests `flux install` embeds, generated by Flux's release) are not in the module, so the
# embed gets one placeholder file. `flux install` and `flux bootstrap` have nothing to install;
# every command that reads and changes objects works.
$(FLUX_CLI):
	set -e; dir=$$(cd /tmp && GOFLAGS=-mod=mod go mod download -json github.com/fluxcd/flux2/v2@$(FLUX_CLI_VERSION) | \
	  sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); test -n "$$dir"; \
	  tmp=$$(mktemp -d); trap 'chmod -R u+w '$$tmp'; rm -rf '$$tmp EXIT; \
	  cp -r $$dir/. $$tmp; chmod -R u+w $$tmp; mkdir -p $$tmp/cmd/flux/manifests; \
	  echo '# placeholder: the install manifests are not embedded' > $$tmp/cmd/flux/manifests/placeholder.yaml; \
	  cd $$tmp && CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go build -o $@ \
	  -ldflags "-X main.VERSION=$(FLUX_CLI_VERSION:v%=%)" ./cmd/flux

# Flux's helm-controller and image-automation-controller are not built here, but their API modules
# are served: controller-gen generates their CRDs from a writable copy of the downloaded module
# (GOFLAGS=-mod=mod resolves the module's dependencies from its own go.mod and go.sum).
FLUX_API_CRD = set -e; mod=$(1); ver=$(2); \
	  dir=$$(cd /tmp && GOFLAGS=-mod=mod go mod download -json $$mod@$$ver | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir"; tmp=$$(mktemp -d); trap 'chmod -R u+w '$$tmp'; rm -rf '$$tmp EXIT; \
	  cp -r $$dir/. $$tmp; chmod -R u+w $$tmp; mkdir -p $(BIN)/crds; \
	  cd $$tmp && GOWORK=off GOFLAGS=-mod=mod $(CONTROLLER_GEN) crd paths=./... output:crd:dir=$$tmp/crds && \
	  cp $$tmp/crds/$(notdir $@) $@

$(HELMRELEASE_CRD): | $(CONTROLLER_GEN)
	$(call FLUX_API_CRD,github.com/fluxcd/helm-controller/api,$(HELM_CONTROLLER_API_VERSION))

$(IMAGEUPDATEAUTOMATION_CRD): | $(CONTROLLER_GEN)
	$(call FLUX_API_CRD,github.com/fluxcd/image-automation-controller/api,$(IMAGE_AUTOMATION_CONTROLLER_API_VERSION))

$(EXTERNALARTIFACT_CRD): | $(CONTROLLER_GEN)
	$(call FLUX_API_CRD,github.com/fluxcd/source-controller/api,$(SOURCE_CONTROLLER_API_VERSION))

# flux-operator needs Go 1.27: it is not built, and not a dependency of any module. The go command of
# the approved Go 1.27 toolchain (GOTOOLCHAIN=go1.27.3, from the module proxy) downloads and
# verifies the module; its api/v1 Go files (tests left out) and its build golden files are copied
# into bin/ as text.
FLUX_OPERATOR_DIR = dir=$$(cd /tmp && GOTOOLCHAIN=go1.27.3 GOFLAGS=-mod=mod go mod download -json \
	  github.com/controlplaneio-fluxcd/flux-operator@$(FLUX_OPERATOR_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir"

$(FLUX_OPERATOR_API):
	set -e; $(FLUX_OPERATOR_DIR); rm -rf $(dir $@); mkdir -p $(dir $@); \
	  for f in $$dir/api/v1/*.go; do case $$f in *_test.go) ;; *) cp $$f $(dir $@);; esac; done; \
	  chmod -R u+w $(dir $@); test -f $@

$(FLUX_OPERATOR_GOLDEN):
	set -e; $(FLUX_OPERATOR_DIR); rm -rf $(dir $@); mkdir -p $(dir $@); \
	  cp $$dir/cmd/cli/testdata/build_resourceset/*.yaml $(dir $@); chmod -R u+w $(dir $@); test -f $@

# Gitea, the forge of shared/testserver.NewGitea, built from a writable copy of its downloaded
# module as upstream's Dockerfile builds it: cgo SQLite (gcc) with its tags and CFLAGS. Without the
# bindata tag it reads its templates, options (locales, README and label templates) and public
# files from disk: they go to bin/gitea-data/, which the test server gives it as STATIC_ROOT_PATH
# (the module has no built JS/CSS: web pages render unstyled; the API does not need them). The
# binary is moved into place last, so that an interrupted build is redone.
$(GITEA):
	set -e; dir=$$(cd /tmp && GOFLAGS=-mod=mod go mod download -json code.gitea.io/gitea@$(GITEA_VERSION) | \
	  sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); test -n "$$dir"; \
	  tmp=$$(mktemp -d); trap 'chmod -R u+w '$$tmp'; rm -rf '$$tmp EXIT; \
	  cp -r $$dir/. $$tmp/src; chmod -R u+w $$tmp/src; \
	  cd $$tmp/src && CGO_ENABLED=1 CGO_CFLAGS=-DSQLITE_MAX_VARIABLE_NUMBER=32766 GOWORK=off GOFLAGS=-mod=mod \
	  go build -tags 'sqlite sqlite_unlock_notify' \
	  -ldflags "-s -w -X main.Version=$(GITEA_VERSION:v%=%) -X 'main.Tags=sqlite sqlite_unlock_notify'" -o $$tmp/gitea . && \
	  rm -rf $(GITEA_DATA) && mkdir -p $(GITEA_DATA) && cp -r templates options public $(GITEA_DATA)/ && \
	  mv $$tmp/gitea $@

## node-tools: build the real node's parts into bin/ (only those missing): kubelet, kube-scheduler,
## kube-proxy, containerd, ctr, its runc shim, runc, the CNI plugins (bin/cni/) and CoreDNS. runc
## links libseccomp (cgo): it needs Debian's libseccomp-dev.
node-tools: $(NODE_TOOLS)

$(KUBELET):
	$(KUBE_BUILD) k8s.io/kubernetes/cmd/kubelet

$(KUBE_SCHEDULER):
	$(KUBE_BUILD) k8s.io/kubernetes/cmd/kube-scheduler

$(KUBE_PROXY):
	$(KUBE_BUILD) k8s.io/kubernetes/cmd/kube-proxy

# containerd finds its shim beside its own binary. The shim is static, as containerd's release
# builds it: it runs in the mount namespace of every container it starts.
CONTAINERD_LDFLAGS = -ldflags "-X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)"
$(CONTAINERD):
	GOBIN=$(BIN) GOFLAGS= go install $(CONTAINERD_LDFLAGS) github.com/containerd/containerd/v2/cmd/containerd@$(CONTAINERD_VERSION)

$(CTR):
	GOBIN=$(BIN) GOFLAGS= go install $(CONTAINERD_LDFLAGS) github.com/containerd/containerd/v2/cmd/ctr@$(CONTAINERD_VERSION)

$(CONTAINERD_SHIM):
	GOBIN=$(BIN) GOFLAGS= CGO_ENABLED=0 go install $(CONTAINERD_LDFLAGS) \
	  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$(CONTAINERD_VERSION)

# With seccomp, as distributions ship it (cgo against libseccomp), so pods' seccomp profiles apply.
$(RUNC):
	@pkg-config --exists libseccomp 2>/dev/null || { echo "runc needs libseccomp's headers: apt-get install libseccomp-dev"; exit 1; }
	GOBIN=$(BIN) GOFLAGS= CGO_ENABLED=1 go install -tags seccomp -ldflags "-X main.version=$(RUNC_VERSION:v%=%)" \
	  github.com/opencontainers/runc@$(RUNC_VERSION)

$(CNI_PLUGINS):
	mkdir -p $(BIN)/cni && GOBIN=$(BIN)/cni GOFLAGS= CGO_ENABLED=0 go install \
	  -ldflags "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_PLUGINS_VERSION)" \
	  github.com/containernetworking/plugins/plugins/$(if $(filter host-local,$(@F)),ipam,$(if $(filter portmap,$(@F)),meta,main))/$(@F)@$(CNI_PLUGINS_VERSION)

# CoreDNS with only the plugins of the node's Corefile (e2e/tools/coredns): the full binary's other
# plugins and their cloud SDKs took most of its build time. Its go.mod pins COREDNS_VERSION.
$(COREDNS):
	cd e2e/tools/coredns && v=$$(GOWORK=off go list -m -f '{{.Version}}' github.com/coredns/coredns) && \
	  if [ "$$v" != "$(COREDNS_VERSION)" ]; then \
	    echo "e2e/tools/coredns/go.mod has CoreDNS $$v, versions.mk $(COREDNS_VERSION)"; exit 1; fi && \
	  GOWORK=off CGO_ENABLED=0 go build -o $@ .

$(CONTROLLER_GEN):
	GOBIN=$(BIN) GOFLAGS= go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(VERSITYGW):
	GOBIN=$(BIN) GOFLAGS= CGO_ENABLED=0 go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

# Built as kustomize-controller is (its api module beside it), with one change: the module
# proxy serves no github.com/fluxcd/pkg/artifact of its go.mod (v0.18.3), so the nearest it
# serves (v0.18.0, the same minor) replaces it.
$(FLUX_SOURCE_CONTROLLER):
	set -e; moddir() { cd /tmp && GOFLAGS=-mod=mod go mod download -json $$1@$(FLUX_SOURCE_CONTROLLER_VERSION) | \
	  sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'; }; \
	  main=$$(moddir github.com/fluxcd/source-controller); api=$$(moddir github.com/fluxcd/source-controller/api); \
	  test -n "$$main" && test -n "$$api"; \
	  tmp=$$(mktemp -d); trap 'chmod -R u+w '$$tmp'; rm -rf '$$tmp EXIT; \
	  cp -r "$$main"/. $$tmp; mkdir -p $$tmp/api; cp -r "$$api"/. $$tmp/api; chmod -R u+w $$tmp; \
	  cd $$tmp && GOWORK=off GOFLAGS=-mod=mod go mod edit -replace github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.0 && \
	  CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go build -o $@ -ldflags "-X main.VERSION=$(FLUX_SOURCE_CONTROLLER_VERSION)" .

$(KUSTOMIZE):
	GOBIN=$(BIN) GOFLAGS= go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

# With the ldflags of Helm's release build, as in the manifest-generator image: its version.
# Helm 4 has no flag for the Kubernetes version it renders for: it takes it from the
# k8s.io/client-go it is built with (v0.36 -> 1.36), here that of its own go.mod, as in the image
# (HELM_KUBE_MINOR, checked by e2e's TestHelmCLI). A bin/helm of another version (an older
# HELM_VERSION) is rebuilt; the other tools are built only when missing.
ifneq ($(shell $(HELM) version --short 2>/dev/null | cut -d+ -f1),$(HELM_VERSION))
.PHONY: $(HELM)
endif
$(HELM):
	GOBIN=$(BIN) GOFLAGS= go install -ldflags "-X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)" \
	  helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

## generate: deepcopy, CRDs into deploy/crds, RBAC into each controller's deploy base
generate: $(CONTROLLER_GEN)
	cd shared && $(CONTROLLER_GEN) object paths=./...
	cd shared && $(CONTROLLER_GEN) crd:maxDescLen=0 paths=./internal/testapi/... output:crd:dir=./internal/testapi/crds
	@for m in $(CONTROLLERS); do \
	  echo "generate $$m"; \
	  ( cd $$m && \
	    $(CONTROLLER_GEN) object paths=./api/... 2>/dev/null; \
	    if [ -d api ]; then $(CONTROLLER_GEN) crd paths=./api/... output:crd:dir=$(ROOT)/deploy/crds; fi; \
	    $(CONTROLLER_GEN) rbac:roleName=$$m paths=./internal/... output:rbac:dir=$(ROOT)/deploy/$$m ) || exit 1; \
	done

## check-generated: fail when generated files differ from what the markers produce
GENERATED = find deploy shared $(addsuffix /api,$(CONTROLLERS)) -type f \( -name '*.yaml' -o -name 'zz_generated*' \) 2>/dev/null | sort | xargs sha256sum
check-generated:
	@before=$$($(GENERATED)); $(MAKE) --no-print-directory generate >/dev/null; after=$$($(GENERATED)); \
	if [ "$$before" != "$$after" ]; then \
	  diff <(echo "$$before") <(echo "$$after"); \
	  echo "generated files were stale: 'make generate' changed the files above; commit them"; exit 1; fi

## build: every controller binary and CLI into bin/, static (CGO_ENABLED=0) as in the images: the
## benchmarks measure the binaries users run (with cgo, the plugin loader linked in through
## kustomize's API exports every symbol: 20 MiB more resident memory)
build:
	@for m in $(CONTROLLERS); do echo "build $$m"; ( cd $$m && CGO_ENABLED=0 go build -o $(BIN)/$$m . ) || exit 1; done
	@for d in $$(ls -d */cmd/* 2>/dev/null | grep -v '^e2e/'); do \
	  echo "build $$d"; ( cd $${d%%/cmd/*} && CGO_ENABLED=0 go build -o $(BIN)/$${d##*/} ./cmd/$${d##*/} ) || exit 1; done

## images: an image archive per controller, bin/images/<controller>.tar (a docker-archive tagged
## sluice.local/<controller>:dev, for `ctr -n k8s.io images import` or `docker load`), built by
## e2e/images from bin/ and the host's CA certificates, busybox and git: nothing is pulled. An
## archive that would not change is not written again.
images: build $(KUSTOMIZE) $(HELM)
	cd e2e && go run ./cmd/images -bin $(BIN) -out $(BIN)/images

## test: tools, generated-files check, lint, every module's tests against the real control plane,
## then the real node's tests (test-node)
test: tools-both-chains
	@$(MAKE) --no-print-directory check-generated lint build test-modules test-race test-node

## test-race: the stress tests of the caches that tenants share (credentials, tokens, replays),
## under the race detector (the class of Argo CD's CVE-2025-55191): the tests named
## *UnderConcurrency, in the packages of RACE_PACKAGES only, as race builds are slow
RACE_PACKAGES := manifest-generator/internal/imagescan/stresstest gating-controller/internal/webhook/stresstest \
	resourceset-controller/internal/forge/stresstest
test-race:
	@for p in $(RACE_PACKAGES); do echo "=== go test -race $$p"; \
	  ( cd $${p%%/*} && go test -race -count=1 -run 'UnderConcurrency' ./$${p#*/}/ ) || exit 1; done

# tools-both-chains builds tools and node-tools in two chains at once, each one build at a time:
# the Kubernetes-based tools in one, Gitea and the node's runtime (dependencies of their own) in the
# other, so that the single-threaded parts of one build (links, cgo's C, downloads) leave no core
# idle, and no package is compiled by both chains at once. What is built already is skipped.
tools-both-chains:
	@$(MAKE) --no-print-directory -j2 --output-sync=line tools-chain-kubernetes tools-chain-other
tools-chain-kubernetes:
	@$(call TIMED_CHAIN,$(filter-out $(GITEA) $(VERSITYGW),$(TOOLS)) $(KUBELET) $(KUBE_SCHEDULER) $(KUBE_PROXY))
tools-chain-other:
	@$(call TIMED_CHAIN,$(GITEA) $(VERSITYGW) $(CONTAINERD) $(CTR) $(CONTAINERD_SHIM) $(RUNC) $(CNI_PLUGINS) $(COREDNS))
# TIMED_CHAIN builds the tools given one after the other, and says how long each took to build
# (not when it was up to date): on a fresh machine, the CI log shows where the tools' time goes.
TIMED_CHAIN = for t in $(1); do s=$$(date +%s); $(MAKE) --no-print-directory -j1 $$t || exit 1; \
	  d=$$(( $$(date +%s) - s )); if [ $$d -ge 2 ]; then echo "tools: $$(basename $$t) built in $$d s"; fi; done

## test-node: the real node's tests (-tags node: e2e/node and make cluster's sandbox): single-node
## clusters built by node-tools run deploy/default with the images. They need root: without it
## they are not run, and say so. One package at a time: each test starts the one node a host has.
test-node: tools node-tools images
	@if [ "$$(id -u)" != 0 ]; then echo "test-node: NOT RUN, the real node's tests need root (sudo make test-node)"; exit 0; fi; \
	cd e2e && go test -tags node -p 1 -count=1 -timeout 45m -v ./node/ ./cmd/sandbox/

test-modules:
	@for m in $(MODULES); do echo "=== go test $$m"; ( cd $$m && go test $(GO_TEST_FLAGS) ./... ) || exit 1; done

## lint: go vet and gofmt for every module; each module also builds alone (GOWORK=off), which
## fails when its go.mod is not tidy with shared's
lint:
	@for m in $(MODULES); do ( cd $$m && go vet ./... && GOWORK=off go build ./... ) || exit 1; done
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## dev: local control plane + CRDs + every controller binary; prints the kubeconfig; Ctrl-C stops
dev: tools build
	cd e2e && go build -o $(BIN)/sandbox ./cmd/sandbox
	$(BIN)/sandbox --bin $(BIN) --state $(ROOT)/.dev --examples $(ROOT)/deploy/examples

## cluster: Sluice as its users run it, on a real node of this machine (as root): the control
## plane and the node of e2e/node, deploy/default with the images of bin/images, the demo's Git
## server reachable from the pods and the host, the demo applied; prints the kubeconfig and the
## repository URL (state in .cluster/); Ctrl-C stops it and undoes the node's changes to the host
cluster: tools node-tools images
	cd e2e && go build -o $(BIN)/sandbox ./cmd/sandbox
	$(BIN)/sandbox --node --bin $(BIN) --state $(ROOT)/.cluster --examples $(ROOT)/deploy/examples

## bench: run every module's benchmarks (those of e2e run the binaries of bin/) and print a table
bench: tools build $(FLUX_SOURCE_CONTROLLER)
	@for m in $(MODULES); do ( cd $$m && go test -run '^$$' -bench . -benchmem ./... ) ; done | tee /tmp/sluice-bench.txt | \
	  awk '/^Benchmark/ {printf "%-60s", $$1; for (i = 3; i < NF; i += 2) printf " %14s %s", $$i, $$(i+1); print ""} /^(FAIL|--- FAIL)/ {print; failed = 1} END {exit failed}'

FUZZTIME ?= 5m
FUZZ_PARALLEL ?=
FUZZ_ONLY ?=
FUZZ_LOGS := /tmp/sluice-fuzz

## fuzz: run each Fuzz test of every module alone for FUZZTIME (5m; FUZZ_PARALLEL=n runs n workers
## instead of one per core; FUZZ_ONLY=<extended regexp> keeps the targets, named
## <module>/<package>.<FuzzTest>, that match), print each target's executions (full logs in
## /tmp/sluice-fuzz) and a table; fails when a target finds a crasher (written to its package's
## testdata/fuzz/<target>/).
## Go 1.26 can fail a run with a bare "context deadline exceeded" as the time runs out
## (golang.org/issue/75804, fixed in Go 1.27): with no failing input written, that is no crasher.
fuzz: tools
	@rm -rf $(FUZZ_LOGS); mkdir -p $(FUZZ_LOGS); failed=0; rows=""; \
	for m in $(MODULES); do \
	  for file in $$(cd $$m && grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	    pkg=$$(dirname $$file); \
	    for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$m/$$file); do \
	      name=$$m/$${pkg#./}.$$t; out=$(FUZZ_LOGS)/$$(echo $$name | tr / _).log; \
	      if [ -n '$(FUZZ_ONLY)' ] && ! echo "$$name" | grep -Eq '$(FUZZ_ONLY)'; then continue; fi; \
	      echo "fuzz $$name"; \
	      ( cd $$m && go test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $(if $(FUZZ_PARALLEL),-parallel $(FUZZ_PARALLEL)) $$pkg ) > $$out 2>&1; rc=$$?; \
	      last=$$(grep 'execs:' $$out | tail -1); echo "  $$last"; \
	      result=ok; \
	      if [ $$rc -ne 0 ]; then \
	        if ! grep -q 'Failing input written' $$out && ! grep -q -- '--- FAIL: Fuzz[^ ]*/' $$out && \
	           grep -qx '    context deadline exceeded' $$out; then \
	          result="ok (end-of-run deadline, no crasher)"; \
	        else \
	          result=FAIL; failed=1; sed -n '/--- FAIL/,$$p' $$out | head -40; \
	        fi; \
	      fi; \
	      rows="$$rows$$name|$$(echo "$$last" | sed -n 's/.*elapsed: \([^,]*\), execs: \([0-9]*\).*/\1|\2/p')|$$result\n"; \
	    done; \
	  done; \
	done; \
	printf "\n%-72s %8s %12s  %s\n" target time execs result; \
	printf "$$rows" | awk -F'|' '{printf "%-72s %8s %12s  %s\n", $$1, $$2, $$3, $$4}'; \
	exit $$failed

clean:
	rm -rf $(BIN) .dev .cluster
