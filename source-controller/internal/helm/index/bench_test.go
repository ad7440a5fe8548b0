package index

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// The large index: 300 charts × 50 versions, about 50 MiB, shaped like a big public
// repository's (most of the bytes are annotations, descriptions and dependencies).
const (
	largeCharts   = 300
	largeVersions = 50
	// benchChart and benchRange are what a typical HelmChart asks for: the latest stable
	// version of one chart in the middle of the index.
	benchChart = "chart-0150"
	benchRange = "*"
)

// writeLargeIndex writes the large index.yaml and its compact form into dir.
func writeLargeIndex(b *testing.B, dir string) (indexPath, compactPath string) {
	b.Helper()
	indexPath = filepath.Join(dir, "index.yaml")
	f, err := os.Create(indexPath)
	if err != nil {
		b.Fatal(err)
	}
	if err := testserver.WriteLargeIndex(f, largeCharts, largeVersions); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	compactPath = filepath.Join(dir, "index.slx")
	if _, err := convertPath(indexPath, compactPath); err != nil {
		b.Fatal(err)
	}
	return indexPath, compactPath
}

// convertPath converts the index at src into a compact index at dst, as the HelmRepository
// reconciler does.
func convertPath(src, dst string) (Stats, error) {
	in, err := os.Open(src)
	if err != nil {
		return Stats{}, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return Stats{}, err
	}
	st, err := Convert(bufio.NewReaderSize(in, 64<<10), out, 1<<30)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return st, err
}

// sink keeps an operation's result reachable until its memory has been sampled.
var sink any

// peakHeapMiB runs op once and returns the most heap it held above what was live before.
// While op runs, /memory/classes/heap/objects:bytes (live objects plus garbage not yet swept:
// what the process really has to hold) is sampled every 100µs from runtime/metrics, which
// does not stop the world, so sampling barely slows op down. That metric lags behind the
// allocations still in per-P caches, which is all an operation of microseconds does, so the
// baseline and the last sample, right after op and before any GC can free its garbage, come
// from runtime.ReadMemStats, which flushes them.
func peakHeapMiB(op func() any) float64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	record := func(v uint64) {
		for {
			p := peak.Load()
			if v <= p || peak.CompareAndSwap(p, v) {
				return
			}
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				metrics.Read(sample)
				record(sample[0].Value.Uint64())
			}
		}
	}()
	sink = op()
	runtime.ReadMemStats(&ms)
	record(ms.HeapAlloc)
	close(stop)
	<-done
	sink = nil
	if p := peak.Load(); p > base {
		return float64(p-base) / (1 << 20)
	}
	return 0
}

// BenchmarkResolveLargeIndex compares resolving one chart version the way Flux does (load
// the whole index.yaml with Helm, then Get) with Resolve on the compact index.
func BenchmarkResolveLargeIndex(b *testing.B) {
	quietHelmLog(b)
	indexPath, compactPath := writeLargeIndex(b, b.TempDir())

	helmOp := func() any {
		idx, err := repo.LoadIndexFile(indexPath)
		if err != nil {
			b.Fatal(err)
		}
		cv, err := idx.Get(benchChart, benchRange)
		if err != nil {
			b.Fatal(err)
		}
		return cv
	}
	sluiceOp := func() any {
		cv, err := Resolve(compactPath, benchChart, benchRange)
		if err != nil {
			b.Fatal(err)
		}
		return cv
	}
	cache := NewCache(10, time.Hour)
	cachedOp := func() any {
		cv, err := cache.Resolve(compactPath, benchChart, benchRange)
		if err != nil {
			b.Fatal(err)
		}
		return cv
	}
	// Both must answer the same before their costs are worth comparing.
	want, got := helmOp().(*repo.ChartVersion), sluiceOp().(*ChartVersion)
	if got.Version != want.Version || got.Digest != want.Digest || got.URLs[0] != want.URLs[0] {
		b.Fatalf("sluice resolved %s %s, helm %s %s", got.Version, got.Digest, want.Version, want.Digest)
	}

	for _, bm := range []struct {
		name string
		op   func() any
	}{{"helm", helmOp}, {"sluice", sluiceOp}, {"sluice-cached", cachedOp}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = bm.op()
			}
			b.ReportMetric(peakHeapMiB(bm.op), "peak-heap-MiB")
		})
	}
}

// BenchmarkConvertLargeIndex measures the one-off conversion of the large index, done once
// per index revision by the HelmRepository reconciler.
func BenchmarkConvertLargeIndex(b *testing.B) {
	dir := b.TempDir()
	indexPath, _ := writeLargeIndex(b, dir)
	fi, err := os.Stat(indexPath)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(dir, "out.slx")
	op := func() any {
		st, err := convertPath(indexPath, dst)
		if err != nil {
			b.Fatal(err)
		}
		if st.Versions != largeCharts*largeVersions {
			b.Fatalf("converted %d versions, want %d", st.Versions, largeCharts*largeVersions)
		}
		return st
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		sink = op()
	}
	b.ReportMetric(peakHeapMiB(op), "peak-heap-MiB")
	out, err := os.Stat(dst)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "index-MiB")
	b.ReportMetric(float64(out.Size())/(1<<20), "compact-MiB")
}
