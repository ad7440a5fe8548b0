package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// The example of docs/helmchart.md, written as a source.toolkit.fluxcd.io/v1beta2 HelmChart as
// Flux users have it: it applies verbatim and is reconciled, and its status reads back in v1beta2.
func TestHelmChartExampleInV1beta2(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "5.2.1"})
	createHelmRepo(t, ns, "podinfo", sourcev1.HelmRepositorySpec{URL: server.URL()})

	// testdata/helmchart-v1beta2.yaml is the example without a namespace, as applied with -n.
	example, err := os.ReadFile(filepath.Join("testdata", "helmchart-v1beta2.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal(example, &obj.Object)).To(Succeed())
	obj.SetNamespace(ns)
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())

	g.Eventually(func(g Gomega) string {
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("source.toolkit.fluxcd.io/v1beta2")
		got.SetKind("HelmChart")
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
		rev, _, _ := unstructured.NestedString(got.Object, "status", "artifact", "revision")
		return rev
	}, timeout).Should(Equal("5.2.1"))
}
