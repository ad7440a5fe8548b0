package chart_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/sluice-gitops/sluice/shared/testserver"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
)

// appSource writes a GitRepository-like tree: charts/app depending on charts/lib through
// file://, and on redis from a repository, vendored in charts/app/charts/ unless vendorRedis
// is false; a values file at the source root and one in the chart.
func appSource(t *testing.T, vendorRedis bool) string {
	t.Helper()
	src := t.TempDir()
	testserver.WriteChartDir(t, filepath.Join(src, "charts", "app"), testserver.ChartSpec{
		Name: "app", Version: "6.0.3",
		Values: map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "app", "tag": "6.0.3"}},
		Files: map[string]string{
			"values-prod.yaml": "image:\n  tag: 6.0.4\n",
			"secret.txt":       "ignored by .helmignore",
			".helmignore":      "secret.txt\n",
		},
		Dependencies: []*helmchart.Dependency{
			{Name: "lib", Version: "^1.0.0", Repository: "file://../lib"},
			{Name: "redis", Version: "17.0.0", Repository: "https://charts.example/"},
		},
	})
	testserver.WriteChartDir(t, filepath.Join(src, "charts", "lib"), testserver.ChartSpec{Name: "lib", Version: "1.2.0", Values: map[string]any{"lib": true}})
	if vendorRedis {
		testserver.PackageChart(t, filepath.Join(src, "charts", "app", "charts"), testserver.ChartSpec{Name: "redis", Version: "17.0.0"})
	}
	writeFile(t, filepath.Join(src, "env", "prod.yaml"), "replicaCount: 3\nimage:\n  pullPolicy: Always\n")
	return src
}

func TestPackageFromDirectory(t *testing.T) {
	g := NewWithT(t)
	src := appSource(t, true)
	out := t.TempDir()

	files := []string{"charts/app/values.yaml", "env/prod.yaml", "values-prod.yaml"}
	res, err := chart.Package(src, "./charts/app", out, chart.Options{ValuesFiles: files, VersionMetadata: "4e5cbb7b97d0.2"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*res).To(Equal(chart.Result{
		Name: "app", Version: "6.0.3+4e5cbb7b97d0.2", Packaged: true, ValuesFiles: files,
		Path: filepath.Join(out, "app-6.0.3+4e5cbb7b97d0.2.tgz"),
	}))
	g.Expect(dirEntries(t, out)).To(ConsistOf("app-6.0.3+4e5cbb7b97d0.2.tgz"))

	c := loadChart(t, res.Path)
	g.Expect(c.Metadata.Version).To(Equal("6.0.3+4e5cbb7b97d0.2"))
	g.Expect(c.Values).To(Equal(map[string]any{
		"replicaCount": float64(3),
		"image":        map[string]any{"repository": "app", "tag": "6.0.4", "pullPolicy": "Always"},
	}))
	var deps []string
	for _, d := range c.Dependencies() {
		deps = append(deps, d.Name()+"-"+d.Metadata.Version)
	}
	// Helm's loader collects subcharts in no fixed order.
	g.Expect(deps).To(ConsistOf("lib-1.2.0", "redis-17.0.0"))
	g.Expect(chartutil.ProcessDependencies(c, map[string]any{})).To(Succeed())
	var names []string
	for _, f := range c.Files {
		names = append(names, f.Name)
	}
	g.Expect(names).To(ContainElements(".helmignore", "values-prod.yaml"))
	g.Expect(names).NotTo(ContainElement("secret.txt"))

	// Without values files nor metadata, a directory is still packaged, with its values.
	res, err = chart.Package(src, "charts/app", t.TempDir(), chart.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("6.0.3"))
	g.Expect(res.Packaged).To(BeTrue())
	g.Expect(loadChart(t, res.Path).Values).To(HaveKeyWithValue("replicaCount", float64(1)))
}

func TestPackageDependencyErrors(t *testing.T) {
	g := NewWithT(t)
	src := appSource(t, false)
	_, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrDependency))
	g.Expect(err).To(MatchError(ContainSubstring("dependency 'redis' (https://charts.example/) is not vendored in charts/; run `helm dependency build` in 'charts/app'")))

	for _, tt := range []struct {
		name string
		dep  helmchart.Dependency
		want string
	}{
		{"leaves the source", helmchart.Dependency{Name: "lib", Version: "1.2.0", Repository: "file://../../../lib"}, "dependency 'lib' (file://../../../lib) leaves the source directory"},
		{"absolute", helmchart.Dependency{Name: "lib", Repository: "file:///etc"}, "must be a path relative to the chart directory"},
		{"missing", helmchart.Dependency{Name: "lib", Repository: "file://../nope"}, "no directory 'charts/nope' in the source"},
		{"wrong version", helmchart.Dependency{Name: "lib", Version: "^2.0.0", Repository: "file://../lib"}, "is version '1.2.0', which does not satisfy '^2.0.0'"},
		{"wrong name", helmchart.Dependency{Name: "common", Repository: "file://../lib"}, "dependency 'common' (file://../lib) is chart 'lib'"},
		{"cycle", helmchart.Dependency{Name: "lib", Repository: "file://../lib"}, "file:// dependencies form a cycle: charts/app -> charts/lib -> charts/app"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			src := t.TempDir()
			testserver.WriteChartDir(t, filepath.Join(src, "charts", "app"), testserver.ChartSpec{Name: "app", Version: "1.0.0", Dependencies: []*helmchart.Dependency{&tt.dep}})
			var libDeps []*helmchart.Dependency
			if tt.name == "cycle" {
				libDeps = []*helmchart.Dependency{{Name: "app", Repository: "file://../app"}}
			}
			testserver.WriteChartDir(t, filepath.Join(src, "charts", "lib"), testserver.ChartSpec{Name: "lib", Version: "1.2.0", Dependencies: libDeps})
			_, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{})
			g.Expect(err).To(MatchError(chart.ErrDependency))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}

	// A file:// chart's own dependencies must be satisfied too.
	src = t.TempDir()
	testserver.WriteChartDir(t, filepath.Join(src, "app"), testserver.ChartSpec{Name: "app", Version: "1.0.0",
		Dependencies: []*helmchart.Dependency{{Name: "lib", Version: "1.x", Repository: "file://../lib"}}})
	testserver.WriteChartDir(t, filepath.Join(src, "lib"), testserver.ChartSpec{Name: "lib", Version: "1.0.0",
		Dependencies: []*helmchart.Dependency{{Name: "postgresql", Version: "12.0.0", Repository: "oci://registry.example/charts"}}})
	_, err = chart.Package(src, "app", t.TempDir(), chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrDependency))
	g.Expect(err).To(MatchError(ContainSubstring("chart 'lib': dependency 'postgresql' (oci://registry.example/charts) is not vendored in charts/")))
}

func TestPackageRefusesPathsOutsideTheSource(t *testing.T) {
	src := appSource(t, true)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.yaml"), "password: hunter2\n")
	testserver.WriteChartDir(t, filepath.Join(outside, "chart"), testserver.ChartSpec{Name: "outside", Version: "1.0.0"})

	for _, chartPath := range []string{"../x", "charts/../../x", "/charts/app", ""} {
		_, err := chart.Package(src, chartPath, t.TempDir(), chart.Options{})
		NewWithT(t).Expect(err).To(MatchError(chart.ErrChartLoad), chartPath)
	}
	_, err := chart.Package(src, "../x", t.TempDir(), chart.Options{})
	NewWithT(t).Expect(err).To(MatchError("chart path '../x' leaves the source directory"))
	_, err = chart.Package(src, "charts/nope", t.TempDir(), chart.Options{})
	NewWithT(t).Expect(err).To(MatchError("no chart at 'charts/nope' in the source"))

	symlink := func(t *testing.T, target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("chart path is a symlink leaving the source", func(t *testing.T) {
		src := appSource(t, true)
		symlink(t, filepath.Join(outside, "chart"), filepath.Join(src, "linked"))
		_, err := chart.Package(src, "linked", t.TempDir(), chart.Options{})
		NewWithT(t).Expect(err).To(MatchError(chart.ErrChartLoad))
	})
	t.Run("file symlink leaving the source", func(t *testing.T) {
		src := appSource(t, true)
		symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(src, "charts", "app", "templates", "leak.yaml"))
		_, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{})
		NewWithT(t).Expect(err).To(MatchError(chart.ErrChartLoad))
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("'templates/leak.yaml': 'charts/app/templates/leak.yaml' is a symlink to the absolute path")))
	})
	t.Run("relative symlink climbing out", func(t *testing.T) {
		src := appSource(t, true)
		rel, _ := filepath.Rel(filepath.Join(src, "charts", "app"), outside)
		symlink(t, rel, filepath.Join(src, "charts", "app", "files"))
		_, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{})
		NewWithT(t).Expect(err).To(MatchError(chart.ErrChartLoad))
	})
	t.Run("values file symlink leaving the source", func(t *testing.T) {
		src := appSource(t, true)
		symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(src, "env", "leak.yaml"))
		_, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{ValuesFiles: []string{"env/leak.yaml"}})
		NewWithT(t).Expect(err).To(MatchError(chart.ErrValuesFile))
		_, err = chart.Package(src, "charts/app", t.TempDir(), chart.Options{ValuesFiles: []string{"../secret.yaml"}})
		NewWithT(t).Expect(err).To(MatchError(chart.ErrValuesFile))
	})
	t.Run("symlinks inside the source are followed", func(t *testing.T) {
		g := NewWithT(t)
		src := appSource(t, true)
		writeFile(t, filepath.Join(src, "shared", "dashboards", "board.json"), "{}")
		symlink(t, "../../shared/dashboards", filepath.Join(src, "charts", "app", "dashboards"))
		symlink(t, "..", filepath.Join(src, "shared", "dashboards", "loop"))
		symlink(t, "../../env/prod.yaml", filepath.Join(src, "charts", "app", "prod.yaml"))
		res, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{ValuesFiles: []string{"prod.yaml"}})
		g.Expect(err).To(MatchError(ContainSubstring("symlink loop")), "a loop of symlinked directories is refused")
		g.Expect(os.Remove(filepath.Join(src, "shared", "dashboards", "loop"))).To(Succeed())
		res, err = chart.Package(src, "charts/app", t.TempDir(), chart.Options{ValuesFiles: []string{"prod.yaml"}})
		g.Expect(err).NotTo(HaveOccurred())
		c := loadChart(t, res.Path)
		var names []string
		for _, f := range c.Files {
			names = append(names, f.Name)
		}
		g.Expect(names).To(ContainElements("dashboards/board.json", "prod.yaml"))
		g.Expect(c.Values).To(HaveKeyWithValue("replicaCount", float64(3)))
	})
}

func TestPackageValuesFiles(t *testing.T) {
	g := NewWithT(t)
	src := appSource(t, true)

	_, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{ValuesFiles: []string{"values-staging.yaml"}})
	g.Expect(err).To(MatchError(chart.ErrValuesFile))
	g.Expect(err).To(MatchError("values file 'values-staging.yaml' not found in the source ('values-staging.yaml') nor in chart 'app' ('charts/app/values-staging.yaml')"))

	res, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{ValuesFiles: []string{"values-staging.yaml", "env/prod.yaml"}, IgnoreMissingValuesFiles: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ValuesFiles).To(Equal([]string{"env/prod.yaml"}))

	// A source-root values file wins over the chart's file of the same path, as in Flux.
	writeFile(t, filepath.Join(src, "values-prod.yaml"), "fromRoot: true\n")
	res, err = chart.Package(src, "charts/app", t.TempDir(), chart.Options{ValuesFiles: []string{"values-prod.yaml"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loadChart(t, res.Path).Values).To(Equal(map[string]any{"fromRoot": true}))
}

func TestPackageArchiveInSource(t *testing.T) {
	g := NewWithT(t)
	src := t.TempDir()
	archive := testserver.PackageChart(t, filepath.Join(src, "packaged"), podinfo("6.0.3"))

	res, err := chart.Package(src, "packaged/podinfo-6.0.3.tgz", t.TempDir(), chart.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Packaged).To(BeFalse())
	g.Expect(readFile(t, res.Path)).To(Equal(readFile(t, archive)))

	res, err = chart.Package(src, "packaged/podinfo-6.0.3.tgz", t.TempDir(), chart.Options{ValuesFiles: []string{"values-eu.yaml"}, VersionMetadata: "1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Packaged).To(BeTrue())
	g.Expect(res.Version).To(Equal("6.0.3+1"))
	g.Expect(loadChart(t, res.Path).Values).To(HaveKeyWithValue("region", "eu"))
}

func TestPackageTooLarge(t *testing.T) {
	g := NewWithT(t)
	src := appSource(t, true)
	writeFile(t, filepath.Join(src, "charts", "app", "files", "big.txt"), randomString(t, 8<<10))

	_, err := chart.Package(src, "charts/app", t.TempDir(), chart.Options{Limits: chart.Limits{MaxFileSize: 4096}})
	g.Expect(err).To(MatchError(chart.ErrTooLarge))
	g.Expect(err).To(MatchError(chart.ErrChartLoad))
	g.Expect(err).To(MatchError(ContainSubstring("chart file 'files/big.txt' is 8192 bytes, larger than --helm-chart-file-max-size (4096 bytes)")))

	_, err = chart.Package(src, "charts/app", t.TempDir(), chart.Options{Limits: chart.Limits{MaxChartSize: 2048}})
	g.Expect(err).To(MatchError(chart.ErrTooLarge))
	g.Expect(err).To(MatchError(ContainSubstring("larger than --helm-chart-max-size (2048 bytes)")))
}

func TestPackageReproducible(t *testing.T) {
	g := NewWithT(t)
	src := appSource(t, true)
	// Several subcharts: Helm's loader collects them from a map, in random order.
	for _, name := range []string{"a", "b", "c", "d"} {
		testserver.PackageChart(t, filepath.Join(src, "charts", "app", "charts"), testserver.ChartSpec{Name: name, Version: "1.0.0"})
	}
	opts := chart.Options{ValuesFiles: []string{"env/prod.yaml"}, VersionMetadata: "1"}

	first, err := chart.Package(src, "charts/app", t.TempDir(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	// chartutil.Save stamps entries with time.Now, at one-second resolution: cross a second.
	time.Sleep(1100 * time.Millisecond)
	for range 3 {
		again, err := chart.Package(src, "charts/app", t.TempDir(), opts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(readFile(t, again.Path)).To(Equal(readFile(t, first.Path)))
	}

	// For the record: chartutil.Save alone is not reproducible.
	c := loadChart(t, first.Path)
	a, err := chartutil.Save(c, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(1100 * time.Millisecond)
	b, err := chartutil.Save(c, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("chartutil.Save twice, a second apart, gives identical bytes: %v", string(readFile(t, a)) == string(readFile(t, b)))
}
