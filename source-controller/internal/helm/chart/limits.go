package chart

import (
	helmarchive "helm.sh/helm/v4/pkg/chart/loader/archive"
)

// Default limits, Flux's defaults for --helm-chart-max-size and --helm-chart-file-max-size.
const (
	DefaultMaxChartSize int64 = 10 << 20
	DefaultMaxFileSize  int64 = 5 << 20
)

// Limits bound what is downloaded and loaded (--helm-chart-max-size,
// --helm-chart-file-max-size); zero (or negative: there is no "unlimited") fields take the
// defaults.
//
// MaxChartSize bounds a chart archive: the download, an archive in the source, and the
// package written. MaxFileSize bounds every file of a chart, decompressed (what Helm's
// helmarchive.MaxDecompressedFileSize bounds). The decompressed total of a chart, its subcharts and
// file:// dependencies included, is bounded by the larger of MaxChartSize and Helm's
// helmarchive.MaxDecompressedChartSize (100 MiB by default): a legitimate 10 MiB archive can
// decompress to several times that, while a gzip bomb cannot exhaust memory.
type Limits struct{ MaxChartSize, MaxFileSize int64 }

func (l Limits) withDefaults() Limits {
	if l.MaxChartSize <= 0 {
		l.MaxChartSize = DefaultMaxChartSize
	}
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	return l
}

// maxDecompressed is the decompressed total allowed for one build. Helm's global is only read,
// never written: writing it per call would race with other builds.
func (l Limits) maxDecompressed() int64 {
	return max(l.MaxChartSize, helmarchive.MaxDecompressedChartSize)
}

// budget counts the decompressed bytes loaded by one build, across every archive and directory
// it reads.
type budget struct {
	limits    Limits
	remaining int64
}

func newBudget(l Limits) *budget {
	l = l.withDefaults()
	return &budget{limits: l, remaining: l.maxDecompressed()}
}

// file accounts for one file of size bytes named name (for the message), checking the per-file
// limit first.
func (b *budget) file(name string, size int64) error {
	if size > b.limits.MaxFileSize {
		return errorf(ErrTooLarge, "chart file '%s' is %d bytes, larger than --helm-chart-file-max-size (%d bytes)",
			name, size, b.limits.MaxFileSize)
	}
	if size > b.remaining {
		return errorf(ErrTooLarge, "chart is larger than %d bytes once decompressed (at file '%s'); raise --helm-chart-max-size or make the chart smaller",
			b.limits.maxDecompressed(), name)
	}
	b.remaining -= size
	return nil
}
