package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// A kubeconfig with two contexts for two user entries, and no reachable API server.
const fallbackKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: alice-entry
  user: {token: a}
- name: bob-entry
  user: {token: b}
contexts:
- name: dev
  context: {cluster: nowhere, user: alice-entry}
- name: prod
  context: {cluster: nowhere, user: bob-entry}
current-context: dev
`

func fallbackFlags(t *testing.T, set func(*genericclioptions.ConfigFlags)) *genericclioptions.ConfigFlags {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(os.WriteFile(path, []byte(fallbackKubeconfig), 0o600)).To(Succeed())
	flags := genericclioptions.NewConfigFlags(false)
	*flags.KubeConfig = path
	if set != nil {
		set(flags)
	}
	return flags
}

// When SelfSubjectReview cannot answer, requestedBy falls back to the kubeconfig, and says so.
func TestWhoAmIFallsBackToTheKubeconfigUser(t *testing.T) {
	g := NewWithT(t)
	flags := fallbackFlags(t, nil)
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	var stderr bytes.Buffer
	g.Expect(whoAmI(context.Background(), cfg, flags, &stderr)).To(Equal("alice-entry"))
	g.Expect(stderr.String()).To(ContainSubstring(`could not ask the API server who you are`))
	g.Expect(stderr.String()).To(ContainSubstring(`recording requestedBy as "alice-entry"`))
}

func TestKubeconfigUserFollowsTheFlags(t *testing.T) {
	g := NewWithT(t)
	g.Expect(kubeconfigUser(fallbackFlags(t, nil))).To(Equal("alice-entry"))
	g.Expect(kubeconfigUser(fallbackFlags(t, func(f *genericclioptions.ConfigFlags) { *f.Context = "prod" }))).To(Equal("bob-entry"))
	g.Expect(kubeconfigUser(fallbackFlags(t, func(f *genericclioptions.ConfigFlags) { *f.AuthInfoName = "carol-entry" }))).To(Equal("carol-entry"))
	g.Expect(kubeconfigUser(fallbackFlags(t, func(f *genericclioptions.ConfigFlags) { *f.Impersonate = "dave" }))).To(Equal("dave"))
	g.Expect(kubeconfigUser(fallbackFlags(t, func(f *genericclioptions.ConfigFlags) { *f.Context = "missing" }))).To(Equal("unknown"))
}
