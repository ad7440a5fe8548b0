package build

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// bigKustomization is a kustomization of 500 objects (50 files of 10 ConfigMaps) behind a
// root .flux.yaml, as in the staging layout of docs/fluxyaml.md.
func bigKustomization() map[string]string {
	files := map[string]string{
		".flux.yaml": "version: 1\ncommandUpdated:\n  generators:\n    - command: kustomize build .\n",
	}
	var resources strings.Builder
	resources.WriteString("namespace: staging\nresources:\n")
	for f := range 50 {
		var docs []string
		for i := range 10 {
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d-%02d\n  labels:\n    app: bench\ndata:\n  key: value-%d\n  other: %q\n", f, i, i, strings.Repeat("x", 64)))
		}
		name := fmt.Sprintf("cm-%02d.yaml", f)
		files["staging/"+name] = strings.Join(docs, "---\n")
		fmt.Fprintf(&resources, "  - %s\n", name)
	}
	files["staging/kustomization.yaml"] = resources.String()
	return files
}

// BenchmarkNoOpBuild is the sync of an unchanged revision: the result comes from the cache and
// no command runs.
func BenchmarkNoOpBuild(b *testing.B) {
	requireKustomize(b)
	srv := serveArtifacts(b)
	art := srv.publish(b, "r1", writeTree(b, bigKustomization()))
	bld := newBuilder(b, Options{})
	spec := specOf("staging")
	res, err := bld.Build(context.Background(), testOwner, art, spec)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Objects) != 500 {
		b.Fatalf("%d objects, want 500", len(res.Objects))
	}

	commands := 0
	b.ReportAllocs()
	for b.Loop() {
		res, err := bld.Build(context.Background(), testOwner, art, spec)
		if err != nil {
			b.Fatal(err)
		}
		if !res.FromCache || len(res.Objects) != 500 {
			b.Fatalf("not from the cache: %+v", res)
		}
		commands += res.CommandsRun
	}
	b.ReportMetric(float64(commands)/float64(b.N), "commands/op")
}

// BenchmarkFirstBuild is the sync of a new revision: download, extraction, `kustomize build` of
// 500 objects, decoding.
func BenchmarkFirstBuild(b *testing.B) {
	requireKustomize(b)
	srv := serveArtifacts(b)
	art := srv.publish(b, "r1", writeTree(b, bigKustomization()))
	storage := b.TempDir()
	spec := specOf("staging")

	commands, n := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		bld := newBuilder(b, Options{StoragePath: filepath.Join(storage, fmt.Sprint(n))})
		res, err := bld.Build(context.Background(), testOwner, art, spec)
		if err != nil {
			b.Fatal(err)
		}
		if res.FromCache || len(res.Objects) != 500 {
			b.Fatalf("unexpected result: from cache %v, %d objects", res.FromCache, len(res.Objects))
		}
		commands += res.CommandsRun
		if err := bld.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(commands)/float64(b.N), "commands/op")
}
