//go:build tools

// Package tools pins the test control plane built by `make tools`: kube-apiserver,
// kube-controller-manager (its namespace and garbage-collector controllers finish deletions) and
// kubectl (and etcd, in ./etcd), compiled from the Go module proxy because envtest's downloader
// needs the internet.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
