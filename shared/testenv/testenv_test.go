package testenv_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
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
