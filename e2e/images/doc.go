// Package images builds the controllers' container images without a registry and without
// pulling anything, with go-containerregistry's Go API: an empty image, layers made here from
// the project's binaries and the host's Debian files, a configuration, written as a
// docker-archive tarball (pkg/v1/tarball) that `docker load` and `ctr images import` read.
//
// Every image is named sluice.local/<controller>:dev (Ref) and has, as its Dockerfile's
// distroless/static:nonroot final stage:
//
//	layer 1, the base:  /etc/passwd and /etc/group (root, nobody, nonroot 65532), /etc/nsswitch.conf,
//	                    /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates), /tmp (1777),
//	                    /home/nonroot
//	last layer:         /usr/local/bin/<controller>, static (CGO_ENABLED=0, make build)
//	configuration:      linux/<the binaries' architecture>, user 65532:65532, entrypoint the binary
//
// The manifest-generator's image has two layers in between, for the .flux.yaml commands (its
// Deployment's --generator-path=/usr/local/bin:/usr/bin:/bin):
//
//	shell and git:      /bin/busybox (busybox-static) and a link per applet in /bin (sh, sed, ...);
//	                    /usr/bin/git with the helpers it runs (HTTP(S) transports, upload-pack,
//	                    submodule), its templates, and the dynamic loader and shared libraries of
//	                    every dynamic executable of the image, as ldd finds them on the host
//	kustomize and helm: /usr/local/bin/kustomize and /usr/local/bin/helm, the pinned builds of bin/
//
// Files are root's and readable by everyone (the runner's sessions run as users of their own);
// times are fixed, so that the same inputs give the same digests.
package images
