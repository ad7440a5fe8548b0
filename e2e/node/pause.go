package node

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// PauseImage is the pods' sandbox image, the one containerd's configuration pins: a name no
// registry serves, so that the node never tries to pull it.
const PauseImage = "sluice.local/pause:dev"

// pauseArchive builds ./internal/pause (static) and writes an image archive holding it as
// /pause, run as nobody as the upstream pause image is, tagged PauseImage.
func pauseArchive(e2eDir, stateDir string) (string, error) {
	dir := filepath.Join(stateDir, "pause")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "pause")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./node/internal/pause")
	build.Dir = e2eDir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the pause program: %w: %s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var layer bytes.Buffer
	if err := tarOneFile(&layer, "pause", data, 0o755); err != nil {
		return "", err
	}
	// From an opener, not LayerFromReader, which buffers into a temporary file that it leaves.
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer.Bytes())), nil
	})
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return "", err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{"/pause"}
	cfg.Config.User = "65535:65535"
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", err
	}
	ref, err := name.NewTag(PauseImage)
	if err != nil {
		return "", err
	}
	archive := filepath.Join(dir, "pause.tar")
	return archive, tarball.WriteToFile(archive, ref, img)
}
