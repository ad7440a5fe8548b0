package chart

import (
	"fmt"
	"path"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// requestedValuesFiles is opts.ValuesFiles, except that a lone "values.yaml" is no values file
// at all: merging the chart's own values.yaml alone changes nothing, and Flux
// (BuildOptions.GetValuesFiles) does not repackage for it either.
func requestedValuesFiles(opts Options) []string {
	if len(opts.ValuesFiles) == 1 && path.Clean(opts.ValuesFiles[0]) == valuesFile {
		return nil
	}
	return opts.ValuesFiles
}

// parseValues parses one values file as Helm parses `-f` files (sigs.k8s.io/yaml into a map).
func parseValues(name string, data []byte) (map[string]any, error) {
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, errorf(ErrValuesFile, "values file '%s' is not a YAML map: %v", name, err)
	}
	return values, nil
}

// mergeValues deep merges src into dst, src winning, the way Helm merges `-f` values files
// (helm.sh/helm/v4/pkg/chart/v2/loader.MergeMaps, which pkg/cli/values calls): maps are merged
// key by key, any other value (lists included) replaces. A null in src is kept, so it deletes
// the key when Helm coalesces the values at render time, as with `-f`. dst is not modified.
func mergeValues(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if vm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(dm, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// setValues makes values the chart's values.yaml: savePackage writes values.yaml from Raw,
// and Values is what a consumer of the in-memory chart sees. Comments of the chart's
// values.yaml are lost, as in Flux.
func setValues(c *helmchart.Chart, values map[string]any) error {
	data, err := yaml.Marshal(values)
	if err != nil {
		return errorf(ErrValuesFile, "serialising the merged values of chart '%s': %v", c.Name(), err)
	}
	c.Values = values
	for _, f := range c.Raw {
		if f.Name == valuesFile {
			f.Data = data
			return nil
		}
	}
	// A chart without values.yaml is valid; Save writes only what Raw holds.
	c.Raw = append(c.Raw, &common.File{Name: valuesFile, Data: data})
	return nil
}

// VersionWithMetadata is the version a chart of the given version is stored with when built
// with the given Options.VersionMetadata: the SemVer build metadata is replaced, as Flux's
// builders do with semver.SetMetadata ("6.0.3+abc" and "2" give "6.0.3+2", not
// "6.0.3+abc.2"), and the version is normalised by the SemVer library ("v6.0" gives
// "6.0.0+2"). An empty metadata returns version unchanged. Callers comparing a stored
// artifact's revision with the version they would build should use it rather than their own
// concatenation.
func VersionWithMetadata(version, metadata string) (string, error) {
	if metadata == "" {
		return version, nil
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return "", errorf(ErrChartLoad, "chart version '%s' is not SemVer, cannot add build metadata '%s': %v", version, metadata, err)
	}
	withMeta, err := v.SetMetadata(metadata)
	if err != nil {
		// The metadata comes from the caller (generation, revision), not from the chart.
		return "", fmt.Errorf("invalid version metadata '%s': %w", metadata, err)
	}
	return withMeta.String(), nil
}

// applyVersionMetadata sets the chart's version with the metadata of opts.
func applyVersionMetadata(c *helmchart.Chart, opts Options) error {
	v, err := VersionWithMetadata(c.Metadata.Version, opts.VersionMetadata)
	if err != nil {
		return err
	}
	c.Metadata.Version = v
	return nil
}
