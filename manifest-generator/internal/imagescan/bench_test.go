package imagescan

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// BenchmarkScan200Workloads scans 20 repositories followed by 10 workloads
// each (glob and semver filters mixed), as a controller does at every
// interval. The steady state must cost one tag list per repository per
// interval, whatever the number of workloads.
func BenchmarkScan200Workloads(b *testing.B) {
	const repos, workloadsPerRepo = 20, 10
	reg := testserver.NewRegistry(b, testserver.RegistryOptions{})
	filters := []string{"semver:~1.0", "glob:main-*", "semver:>=1.0.0", "*", "regex:^main-[0-9]+$"}
	type workload struct {
		repo   name.Repository
		filter Filter
	}
	var workloads []workload
	for r := range repos {
		repo := fmt.Sprintf("team/app%02d", r)
		for i, tag := range []string{"1.0.0", "1.0.1", "1.0.2", "1.1.0", "main-1", "main-2", "main-3"} {
			reg.PushImage(b, repo, tag, epoch.Add(time.Duration(i)*time.Hour))
		}
		for w := range workloadsPerRepo {
			f, err := ParseFilter(filters[w%len(filters)])
			if err != nil {
				b.Fatal(err)
			}
			workloads = append(workloads, workload{repository(b, reg.Host(), repo), f})
		}
	}
	clock := newClock()
	s := New(Config{Addresses: allowLoopback, Interval: 5 * time.Minute, Clock: clock})
	opts := Options{Transport: reg.Transport()}
	ctx := context.Background()
	scan := func() {
		for _, w := range workloads {
			if _, err := s.Newest(ctx, w.repo, w.filter, opts); err != nil {
				b.Fatal(err)
			}
		}
	}

	scan()
	first := s.Stats()

	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		clock.Step(5 * time.Minute)
		// The CPU of the process includes the in-process registry's share
		// of the tag lists.
		before := processCPU(b)
		scan()
		cpu += processCPU(b) - before
		// Later scans within the interval are answered from the caches.
		scan()
	}
	b.StopTimer()
	steady := s.Stats().Sub(first)
	// Reported after ResetTimer, which drops metrics reported before it.
	b.ReportMetric(float64(first.Requests()), "first-scan-requests")
	b.ReportMetric(float64(steady.Requests())/float64(b.N), "registry-requests/interval")
	b.ReportMetric(float64(steady.TagLists)/float64(b.N), "tag-lists/interval")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/scan")
	// Past DigestRefresh (a day: 288 intervals, reached when b.N is large) a known tag's digest
	// is checked again with one HEAD; nothing else is requested again.
	if steady.TagLists != int64(repos*b.N) || steady.Blobs != 0 || steady.Other != 0 ||
		steady.Manifests > int64(repos*7*(b.N/288)) {
		b.Fatalf("steady state: %+v over %d intervals, want one tag list per repository per interval", steady, b.N)
	}
}

// processCPU is the CPU time of the process so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
