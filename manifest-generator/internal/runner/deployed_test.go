package runner_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// deployedRunner is a runner started as the manifest-generator's Deployment starts its runner
// container: as root with every capability but SETUID, SETGID, CHOWN, FOWNER and KILL (setpriv
// drops the others from the bounding set), --job-users, and its socket in a directory made
// like an emptyDir (0777, with the fsGroup's setgid bit), as is its work directory.
type deployedRunner struct {
	runner.Client
	socketDir, workdir string
}

// deployedJobUsers are the users of the deployed runners of the tests: not those of the
// package's local runner, which runs at the same time.
const deployedJobUsers = "65700-65709"

func startDeployedRunner(t *testing.T, clientUID int, extraArgs ...string) *deployedRunner {
	t.Helper()
	requireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to start the runner with the Deployment's capabilities")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "deployed-runner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.RemoveTree(base) })
	d := &deployedRunner{socketDir: filepath.Join(base, "run-runner"), workdir: filepath.Join(base, "work")}
	for _, dir := range []string{base, d.socketDir, d.workdir} {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for dir, mode := range map[string]os.FileMode{base: 0o755, d.socketDir: 0o777 | os.ModeSetgid, d.workdir: 0o777 | os.ModeSetgid} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	d.Socket = filepath.Join(d.socketDir, "runner.sock")
	args := append([]string{"--bounding-set=-all,+setuid,+setgid,+chown,+fowner,+kill", "--", self,
		"runner", "--socket=" + d.Socket, "--workdir=" + d.workdir, "--job-users=" + deployedJobUsers,
		"--client-uid=" + strconv.Itoa(clientUID)}, extraArgs...)
	cmd := exec.Command(setpriv, args...)
	cmd.Env = []string{}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	d.RunnerUID = 0
	deadline := time.Now().Add(30 * time.Second)
	// The socket file appears when it is bound; it is the controller's, 0600, only once the
	// runner listens on it.
	for {
		if fi, err := os.Stat(d.Socket); err == nil && fi.Mode()&os.ModeSocket != 0 && fi.Mode().Perm() == 0o600 &&
			int(fi.Sys().(*syscall.Stat_t).Uid) == clientUID {
			break
		}
		select {
		case <-done:
			t.Fatal("the runner exited at start; its log is above")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the runner did not listen within 30s")
		}
	}
	return d
}

// session opens a session of the deployed runner, closed when the test ends.
func (d *deployedRunner) session(t *testing.T, dir string, opts runner.Options) *runner.Session {
	t.Helper()
	s, err := d.Session(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// workdirEntries lists the session directories of the runner.
func (d *deployedRunner) workdirEntries(g Gomega) []string {
	des, err := os.ReadDir(d.workdir)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// dialRaw connects to the socket as the test process, without the client's checks.
func dialRaw(g Gomega, socket string) net.Conn {
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	return conn
}

// attackTool is a copy of the test binary that the sessions' users may run (they cannot reach
// the test binary itself; the runner starts its sessions through /proc/self/exe).
func attackTool(t *testing.T) string {
	t.Helper()
	attackOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			attackErr = err
			return
		}
		dir, err := os.MkdirTemp("", "attack-tool-")
		if err != nil {
			attackErr = err
			return
		}
		attackPath = filepath.Join(dir, "attack")
		data, err := os.ReadFile(self)
		if err == nil {
			err = os.WriteFile(attackPath, data, 0o755)
		}
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		attackErr = err
	})
	if attackErr != nil {
		t.Fatal(attackErr)
	}
	return attackPath
}

var (
	attackOnce sync.Once
	attackPath string
	attackErr  error
)
