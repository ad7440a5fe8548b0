// Package sessionpod runs each session of .flux.yaml commands (the generators of one
// ManifestGeneration sync, or the generators and updaters of one ManifestUpdate) in a pod of
// its own, in the namespace of the object it works for: the container runtime, not a pool of
// users in one shared container, keeps tenants apart. The pod's processes, System V IPC, mounts
// and /proc are its own (its PID, IPC and mount namespaces go with it), its memory, CPU and
// files are bounded by the kubelet, and the namespace's LimitRange, ResourceQuota and
// NetworkPolicies apply to it.
//
// The pod runs `manifest-generator runner session` from the controller's own image (which the
// node already has), as a user no other session has, with restricted Pod Security, no
// ServiceAccount token and a read-only root filesystem; its files live in a memory-backed
// emptyDir whose size the kernel enforces. The pod's own process waits; the controller starts
// the session process beside it (an exec, whose output goes to the controller alone, not into
// the node's container logs) and speaks the runner's session protocol over its standard input
// and output (internal/runner): the tree goes in that way and the output comes back bounded, so
// the pod needs no network at all.
// Closing the session deletes the pod.
//
// Files: options.go (the flags), pod.go (the pod's spec), dialer.go (create, wait, exec),
// conn.go (the exec's streams as a connection), sweep.go (pods a crashed controller left).
package sessionpod

// The controller creates, execs in and deletes the session pods in the namespaces of the
// objects it serves.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods/exec,verbs=get;create
