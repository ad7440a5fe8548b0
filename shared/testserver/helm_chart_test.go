package testserver_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

var specWithEverything = testserver.ChartSpec{
	Name:       "app",
	Version:    "1.2.3",
	AppVersion: "v9",
	Values:     map[string]any{"greeting": "hello", "replicas": 3, "image": map[string]any{"tag": "v9"}},
	Files: map[string]string{
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}\n",
		"files/config.txt":      "some config\n",
		"README.md":             "# app\n",
	},
	Dependencies: []*chart.Dependency{{Name: "dep", Version: "0.1.0", Repository: "https://charts.example.com"}},
}

// render renders the chart as `helm template` does and returns the manifests by template path.
func render(t *testing.T, ch *chart.Chart, values map[string]any) map[string]string {
	t.Helper()
	vals, err := chartutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "rel", Namespace: "ns"}, common.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPackageChart(t *testing.T) {
	g := NewWithT(t)
	archive := testserver.PackageChart(t, t.TempDir(), specWithEverything)
	g.Expect(filepath.Base(archive)).To(Equal("app-1.2.3.tgz"))

	ch, err := loader.Load(archive)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Name()).To(Equal("app"))
	g.Expect(ch.Metadata.Version).To(Equal("1.2.3"))
	g.Expect(ch.Metadata.AppVersion).To(Equal("v9"))
	g.Expect(ch.Metadata.Dependencies).To(HaveLen(1))
	g.Expect(ch.Metadata.Dependencies[0].Name).To(Equal("dep"))
	g.Expect(ch.Values).To(HaveKeyWithValue("greeting", "hello"))
	var names []string
	for _, f := range ch.Templates {
		names = append(names, f.Name)
	}
	g.Expect(names).To(ConsistOf(testserver.ConfigMapTemplateName, "templates/secret.yaml"))
	names = nil
	for _, f := range ch.Files {
		names = append(names, f.Name)
	}
	g.Expect(names).To(ContainElements("files/config.txt", "README.md"))

	// The default template renders the values into a ConfigMap, overrides included.
	out := render(t, ch, map[string]any{"greeting": "hi"})
	var cm corev1.ConfigMap
	g.Expect(yaml.UnmarshalStrict([]byte(out["app/"+testserver.ConfigMapTemplateName]), &cm)).To(Succeed())
	g.Expect(cm.Name).To(Equal("rel-app"))
	g.Expect(cm.Namespace).To(Equal("ns"))
	g.Expect(cm.Annotations).To(HaveKeyWithValue("sluice.test/chart-version", "1.2.3"))
	g.Expect(cm.Data).To(Equal(map[string]string{"greeting": "hi", "replicas": "3", "image": `{"tag":"v9"}`}))
}

func TestPackageChartValuesFile(t *testing.T) {
	g := NewWithT(t)
	// A literal values.yaml wins over Values, so a test can ship comments or broken YAML.
	archive := testserver.PackageChart(t, t.TempDir(), testserver.ChartSpec{
		Name: "app", Version: "0.1.0", Files: map[string]string{"values.yaml": "# comment\nkey: value\n"},
	})
	ch, err := loader.Load(archive)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Values).To(Equal(map[string]any{"key": "value"}))

	_, err = testserver.BuildChart(testserver.ChartSpec{Name: "app", Version: "not-semver"})
	g.Expect(err).To(MatchError(ContainSubstring("version")))
	_, err = testserver.BuildChart(testserver.ChartSpec{Name: "app", Version: "1.0.0", Files: map[string]string{"../x": ""}})
	g.Expect(err).To(HaveOccurred())
}

func TestWriteChartDir(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "charts", "my-app")
	testserver.WriteChartDir(t, dir, specWithEverything)

	for _, name := range []string{"Chart.yaml", "values.yaml", "templates/configmap.yaml", "templates/secret.yaml", "files/config.txt", "README.md"} {
		g.Expect(filepath.Join(dir, filepath.FromSlash(name))).To(BeAnExistingFile())
	}
	ch, err := loader.Load(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Name()).To(Equal("app"))
	g.Expect(ch.Metadata.Version).To(Equal("1.2.3"))
	g.Expect(ch.Values).To(HaveKeyWithValue("image", HaveKeyWithValue("tag", "v9")))

	// A new version written over the old one replaces the files (a new commit in Git).
	testserver.WriteChartDir(t, dir, testserver.ChartSpec{Name: "app", Version: "1.3.0", Values: map[string]any{"greeting": "bye"}})
	ch, err = loader.Load(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.Version).To(Equal("1.3.0"))
	g.Expect(ch.Values).To(Equal(map[string]any{"greeting": "bye"}))
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("version: 1.3.0"))
}
