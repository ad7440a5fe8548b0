package testenv_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The control plane is the kube-apiserver built from source into bin/, and it serves the CRDs of
// deploy/crds.
func TestStartServesTheBuiltAPIServerAndTheCRDs(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	g.Expect(env.Environment.BinaryAssetsDirectory).To(Equal(filepath.Join(env.Root, "bin")))
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	version, err := dc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(version.GitVersion).To(Equal("v1.36.3"))

	resources, err := dc.ServerResourcesForGroupVersion("gating.toolkit.fluxcd.io/v1alpha1")
	g.Expect(err).NotTo(HaveOccurred())
	var kinds []string
	for _, r := range resources.APIResources {
		kinds = append(kinds, r.Kind)
	}
	g.Expect(kinds).To(ContainElement("Gate"))

	gates := &unstructured.UnstructuredList{}
	gates.SetAPIVersion("gating.toolkit.fluxcd.io/v1alpha1")
	gates.SetKind("GateList")
	g.Expect(env.Client.List(context.Background(), gates, client.InNamespace("default"))).To(Succeed())

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())
	g.Expect(kubeconfig).To(BeAnExistingFile())
}

func TestCheckBinariesNamesTheMakeTarget(t *testing.T) {
	g := NewWithT(t)
	err := testenv.CheckBinaries(t.TempDir(), "kube-apiserver", "etcd")
	g.Expect(err).To(MatchError(ContainSubstring("[kube-apiserver etcd] not found")))
	g.Expect(err).To(MatchError(ContainSubstring("run `make tools`")))
}

// Namespace gives each test a namespace of its own, named after the test, gone at its end.
func TestNamespaceIsTheTestsOwn(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	var first string
	t.Run("one", func(t *testing.T) {
		first = env.Namespace(t)
		second := env.Namespace(t)
		g.Expect(first).To(HavePrefix("testnamespaceisthetestsown-one-"))
		g.Expect(second).NotTo(Equal(first))
		ns := &corev1.Namespace{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: first}, ns)).To(Succeed())
		g.Expect(ns.DeletionTimestamp).To(BeNil())
	})
	// envtest has no namespace controller: the namespace is Terminating, not gone.
	ns := &corev1.Namespace{}
	err = env.Client.Get(context.Background(), client.ObjectKey{Name: first}, ns)
	g.Expect(apierrors.IsNotFound(err) || ns.DeletionTimestamp != nil).To(BeTrue(), "namespace %s not deleted", first)
}
