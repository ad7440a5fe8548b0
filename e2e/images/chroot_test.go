package images_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/e2e/images"
)

// requireRoot skips a test that runs programs inside an image's filesystem (chroot) unless the
// tests run as root, as CI does (.ci/run).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a program in an image's filesystem needs root (chroot); CI runs as root")
	}
}

// addDevices makes the device files a container runtime gives every container (runc's
// defaults) in an extracted image: programs open /dev/null for the streams they do not use.
func addDevices(t *testing.T, root string) {
	t.Helper()
	devices := map[string][2]uint32{"null": {1, 3}, "zero": {1, 5}, "full": {1, 7}, "random": {1, 8}, "urandom": {1, 9}, "tty": {5, 0}}
	if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, dev := range devices {
		p := filepath.Join(root, "dev", name)
		// Linux's device number of a major below 4096 and a minor below 256.
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(dev[0]<<8|dev[1])); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := os.Chmod(p, 0o666); err != nil { // past the umask
			t.Fatal(err)
		}
	}
}

// inImage runs argv with root as its /, as uid:gid, in dir, with env only: the image's files
// and nothing of the host's, as in a container.
func inImage(root string, uid, gid uint32, dir string, env []string, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root,
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Each image's entrypoint runs as the image's user in the image's filesystem alone: the static
// controllers without any library, the manifest-generator with what its image carries.
func TestImagesRunTheirEntrypoint(t *testing.T) {
	requireRoot(t)
	for _, c := range images.Controllers {
		t.Run(c, func(t *testing.T) {
			g := NewWithT(t)
			img := readImage(t, c)
			cfg, err := img.ConfigFile()
			g.Expect(err).NotTo(HaveOccurred())
			dir := t.TempDir()
			extract(t, img, dir)
			addDevices(t, dir)
			u, gr, _ := strings.Cut(cfg.Config.User, ":")
			uid, err1 := strconv.ParseUint(u, 10, 32)
			gid, err2 := strconv.ParseUint(gr, 10, 32)
			g.Expect(err1).NotTo(HaveOccurred())
			g.Expect(err2).NotTo(HaveOccurred())
			argv := append(append([]string{}, cfg.Config.Entrypoint...), "--help")
			out, err := inImage(dir, uint32(uid), uint32(gid), cfg.Config.WorkingDir, cfg.Config.Env, argv...)
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring("--metrics-addr"))
		})
	}
}
