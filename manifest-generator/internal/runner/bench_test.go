package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// BenchmarkSession2000Files measures what a session costs the controller before its first
// command does any work: connecting, starting the job process, uploading and extracting a tree
// of 2,000 small YAML files (~200 bytes each, in 40 directories), running `true`, and closing.
//
//	cd manifest-generator && go test -run '^$' -bench Session2000Files ./internal/runner/
func BenchmarkSession2000Files(b *testing.B) {
	files := make(map[string]string, 2000)
	for d := range 40 {
		for f := range 50 {
			name := fmt.Sprintf("app-%02d/manifest-%02d.yaml", d, f)
			// ~200 bytes: a small ConfigMap.
			doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d-%02d\n  namespace: app-%02d\n  labels:\n    app.kubernetes.io/name: app-%02d\ndata:\n  key: %s\n",
				d, f, d, d, strings.Repeat("v", 40))
			files[name] = doc
		}
	}
	local := newTree(b, files)
	ctx := context.Background()
	n := 0
	for b.Loop() {
		s, err := testRunner.Session(local, runner.Options{})
		if err != nil {
			b.Fatal(err)
		}
		// The first call connects and uploads.
		if _, err := s.Run(ctx, fluxyaml.Command{Command: "true"}, ".", nil); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(n), "ms/op")
}
