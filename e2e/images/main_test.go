package images_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-gitops/sluice/e2e/images"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

var (
	root     string // the repository
	archives string // the archives Build wrote for this run
	results  []images.Result
)

// TestMain builds every image once, from bin/ (make build, make tools), into a temporary
// directory: `go test` alone checks the images the builder makes now, not stale archives.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "sluice-images-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	archives = filepath.Join(tmp, "images")
	results, err = images.Build(images.Options{Bin: filepath.Join(root, "bin"), Out: archives})
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the images:", err)
		return 1
	}
	return m.Run()
}
