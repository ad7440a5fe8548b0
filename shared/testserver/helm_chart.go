package testserver

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// ChartSpec describes a Helm chart the helpers build with Helm's own chart packages, so the
// archives and directories are exactly what `helm package` and `helm create` users produce.
type ChartSpec struct {
	// Name and Version are required; Version must be SemVer (Helm refuses anything else).
	Name, Version string
	// AppVersion is optional.
	AppVersion string
	// Values are written as values.yaml (an empty map when nil).
	Values map[string]any
	// Files are extra files inside the chart, keyed by slash-separated path relative to the chart
	// root ("templates/secret.yaml", "files/config.txt", "crds/crd.yaml"). Paths under
	// templates/ are templates; "values.yaml" replaces the file generated from Values verbatim
	// (to test comments or malformed values); "values.schema.json" becomes the chart's schema.
	// "templates/configmap.yaml" replaces the default template. Chart.yaml is generated from
	// the other fields and may not be given.
	Files map[string]string
	// Dependencies are listed in Chart.yaml; the dependent charts are not vendored under
	// charts/ (that is what `helm dependency build` does, and what a controller may be tested
	// doing).
	Dependencies []*chart.Dependency
}

// ConfigMapTemplateName is the chart's default template, a ConfigMap rendering the values.
const ConfigMapTemplateName = "templates/configmap.yaml"

// configMapTemplate renders every top-level value as a data key, so a test can check which
// values a release was rendered with; maps and lists are rendered as JSON because ConfigMap
// data must be strings. The annotations tell which chart version rendered it.
const configMapTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  namespace: {{ .Release.Namespace }}
  annotations:
    sluice.test/chart: {{ .Chart.Name | quote }}
    sluice.test/chart-version: {{ .Chart.Version | quote }}
data:
{{- range $k, $v := .Values }}
  {{ $k }}: {{ if or (kindIs "map" $v) (kindIs "slice" $v) }}{{ toJson $v | quote }}{{ else }}{{ $v | toString | quote }}{{ end }}
{{- end }}
`

// BuildChart returns the chart c describes as Helm's in-memory chart, validated as Helm
// validates a chart before packaging it.
func BuildChart(c ChartSpec) (*chart.Chart, error) {
	values := c.Values
	if values == nil {
		values = map[string]any{}
	}
	valuesYAML, err := yaml.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("values of chart %s: %w", c.Name, err)
	}
	ch := &chart.Chart{
		Metadata: &chart.Metadata{
			APIVersion:   chart.APIVersionV2,
			Name:         c.Name,
			Version:      c.Version,
			AppVersion:   c.AppVersion,
			Description:  "A chart made by sluice's testserver",
			Type:         "application",
			Dependencies: c.Dependencies,
		},
		Values: values,
	}

	templates := map[string][]byte{ConfigMapTemplateName: []byte(configMapTemplate)}
	// Map iteration order is random: sort so the same spec always gives the same archive
	// order, and so chart.Files (which loaders keep in archive order) is stable.
	names := make([]string, 0, len(c.Files))
	for name := range c.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data := []byte(c.Files[name])
		clean := path.Clean(name)
		if clean != name || !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("chart %s: file %q must be a clean relative slash path", c.Name, name)
		}
		switch {
		case name == chartutil.ChartfileName:
			return nil, fmt.Errorf("chart %s: Chart.yaml is generated from the ChartSpec", c.Name)
		case name == chartutil.ValuesfileName:
			valuesYAML = data
			// Values stays what the spec said: a malformed values.yaml must still package.
		case name == chartutil.SchemafileName:
			ch.Schema = data
		case strings.HasPrefix(name, chartutil.TemplatesDir+"/"):
			templates[name] = data
		default:
			ch.Files = append(ch.Files, &common.File{Name: name, Data: data})
		}
	}
	templateNames := make([]string, 0, len(templates))
	for name := range templates {
		templateNames = append(templateNames, name)
	}
	sort.Strings(templateNames)
	for _, name := range templateNames {
		ch.Templates = append(ch.Templates, &common.File{Name: name, Data: templates[name]})
	}
	// chartutil.Save and SaveDir write values.yaml from Raw, not from Values.
	ch.Raw = []*common.File{{Name: chartutil.ValuesfileName, Data: valuesYAML}}

	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s-%s: %w", c.Name, c.Version, err)
	}
	return ch, nil
}

// PackageChart packages the chart into dir as <name>-<version>.tgz with chartutil.Save (what
// `helm package` calls) and returns the archive's path.
func PackageChart(t testing.TB, dir string, c ChartSpec) string {
	t.Helper()
	ch, err := BuildChart(c)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	archive, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatalf("testserver: packaging chart %s-%s: %v", c.Name, c.Version, err)
	}
	return archive
}

// WriteChartDir writes the unpacked chart (Chart.yaml, values.yaml, templates/ and the extra
// files) into dir itself, for a chart kept in a Git work tree. Existing files of the same names
// are overwritten; other files in dir are left alone, so a test can write a new version over
// an old one and commit it.
func WriteChartDir(t testing.TB, dir string, c ChartSpec) {
	t.Helper()
	ch, err := BuildChart(c)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	// chartutil.SaveDir writes into <dest>/<name>: let it write into a scratch directory and
	// copy the result, so the layout is Helm's while the caller chooses the directory's name.
	scratch := t.TempDir()
	if err := chartutil.SaveDir(ch, scratch); err != nil {
		t.Fatalf("testserver: writing chart %s-%s: %v", c.Name, c.Version, err)
	}
	if err := copyTree(filepath.Join(scratch, ch.Name()), dir); err != nil {
		t.Fatalf("testserver: copying chart %s-%s into %s: %v", c.Name, c.Version, dir, err)
	}
}

// copyTree copies the regular files under src into dst, overwriting files that exist (which
// os.CopyFS refuses to do).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
