// Command images writes the OCI image archives of the controllers (`make images`): one
// docker-archive tarball per controller, tagged sluice.local/<controller>:dev, for
// `ctr -n k8s.io images import` or `docker load`. See package images.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluice-gitops/sluice/e2e/images"
)

func main() {
	bin := flag.String("bin", "bin", "the directory of the controller binaries, kustomize and helm")
	out := flag.String("out", "bin/images", "the directory the archives are written to")
	only := flag.String("controllers", "", "comma-separated controllers to build (all when empty)")
	flag.Parse()

	opts := images.Options{Bin: *bin, Out: *out}
	if *only != "" {
		opts.Controllers = strings.Split(*only, ",")
	}
	start := time.Now()
	results, err := images.Build(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	for _, r := range results {
		state := "unchanged"
		if r.Written {
			state = "written"
		}
		fmt.Printf("%-60s %s %s (%s)\n", r.Path, r.Ref, r.Digest, state)
	}
	fmt.Printf("images: %s\n", time.Since(start).Round(100*time.Millisecond))
}
