// Package fluxreceiver serves Flux's Receiver API (notification.toolkit.fluxcd.io/v1) in the
// gating-controller: a reconciler that gives each Receiver its webhook path, and an HTTP server
// that authenticates the deliveries of GitHub, Gitea, GitLab, Bitbucket Server, registries and
// generic callers and asks the Receiver's objects to reconcile. Pushes are routed: a GitRepository
// is asked only when the push is to its repository and to a reference it follows
// (docs/flux-receiver.md).
package fluxreceiver

// The reconciler reads Receivers and writes their status; the server reads their Secret (get:
// Secrets are read uncached) and reads and patches the objects a Receiver names: every kind that
// spec.resources[].kind accepts, get and list (name `*`), and patch (the requestedAt annotation).
// +kubebuilder:rbac:groups=notification.toolkit.fluxcd.io,resources=receivers,verbs=get;list;watch
// +kubebuilder:rbac:groups=notification.toolkit.fluxcd.io,resources=receivers/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;helmrepositories;helmcharts;buckets;externalartifacts,verbs=get;list;patch
// +kubebuilder:rbac:groups=source.extensions.fluxcd.io,resources=artifactgenerators,verbs=get;list;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;patch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagerepositories;imagepolicies;imageupdateautomations,verbs=get;list;patch
// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestgenerations,verbs=get;list;patch
// +kubebuilder:rbac:groups=fluxcd.controlplane.io,resources=resourcesets;resourcesetinputproviders,verbs=get;list;patch
