package chart

import (
	"errors"
	"fmt"
)

// Options configure a build; see the package documentation for their semantics.
type Options struct {
	// ValuesFiles are merged in order, the last one winning, into the chart's values.yaml. For
	// Pull they are paths inside the chart; for Package, paths relative to the source root
	// (like Flux), or else relative to the chart directory.
	ValuesFiles []string
	// IgnoreMissingValuesFiles skips values files that do not exist instead of failing.
	IgnoreMissingValuesFiles bool
	// VersionMetadata, when set, becomes the SemVer build metadata of the stored version
	// (see VersionWithMetadata) and forces a repackage.
	VersionMetadata string
	// Limits bound what is downloaded and loaded.
	Limits Limits
}

// Result describes the chart archive written.
type Result struct {
	// Name and Version of the chart as stored (Version with the version metadata).
	Name, Version string
	// Packaged is true when the archive was (re)packaged, false when the pulled archive (or
	// the archive in the source) is stored as is.
	Packaged bool
	// ValuesFiles are the values files merged, as given in Options (missing ones skipped when
	// ignored); empty when the chart's own values.yaml was kept.
	ValuesFiles []string
	// Path is the archive written in the output directory, named <name>-<version>.tgz.
	Path string
}

var (
	// ErrChartPull: the chart could not be downloaded (network, TLS, authentication, HTTP
	// status, digest mismatch).
	ErrChartPull = errors.New("chart pull failed")
	// ErrChartLoad: the archive or directory is not a valid chart, or is unsafe (entries or
	// symlinks leaving the chart, a chart path leaving the source).
	ErrChartLoad = errors.New("chart load failed")
	// ErrValuesFile: a values file is missing, invalid YAML or not a map.
	ErrValuesFile = errors.New("values file error")
	// ErrDependency: a dependency in Chart.yaml is neither vendored in charts/ nor a file://
	// chart in the source that can be loaded.
	ErrDependency = errors.New("chart dependency error")
	// ErrTooLarge: a download, file or chart exceeds the Limits.
	ErrTooLarge = errors.New("chart exceeds a size limit")
)

// buildError carries a message written for the user and the sentinel it belongs to, without
// prefixing the message with the sentinel's text: errors.Is(err, ErrValuesFile) holds while
// err.Error() reads "values file 'x.yaml' not found in chart 'podinfo'".
type buildError struct {
	kind error
	err  error
}

func (e *buildError) Error() string   { return e.err.Error() }
func (e *buildError) Unwrap() []error { return []error{e.kind, e.err} }

// errorf formats a message (%w allowed) and ties it to the sentinel kind.
func errorf(kind error, format string, args ...any) error {
	return &buildError{kind: kind, err: fmt.Errorf(format, args...)}
}

// as ties an existing error to one more sentinel, keeping its message.
func as(kind error, err error) error {
	if err == nil || errors.Is(err, kind) {
		return err
	}
	return &buildError{kind: kind, err: err}
}
