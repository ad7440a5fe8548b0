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
	if err := buildStatic(e2eDir, "./node/internal/pause", bin); err != nil {
		return "", err
	}
	archive := filepath.Join(dir, "pause.tar")
	return archive, writeImage(archive, PauseImage, "65535:65535", []string{"/pause"}, map[string]string{"pause": bin})
}

// buildStatic builds a package of the e2e module into a static executable.
func buildStatic(e2eDir, pkg, out string) error {
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	build.Dir = e2eDir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if output, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w: %s", pkg, err, output)
	}
	return nil
}

// writeImage writes an image archive of one layer holding files (path in the image, without
// the leading slash: file on the host), executable, tagged ref.
func writeImage(archive, ref, user string, entrypoint []string, files map[string]string) error {
	var layer bytes.Buffer
	contents := map[string][]byte{}
	for path, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		contents[path] = data
	}
	if err := tarFiles(&layer, contents, 0o755); err != nil {
		return err
	}
	// From an opener, not LayerFromReader, which buffers into a temporary file that it leaves.
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer.Bytes())), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.User = user
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(archive, tag, img)
}
