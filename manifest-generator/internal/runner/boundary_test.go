package runner_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// A command of one tenant renames the runner's socket and listens on its path, so that the next
// session of any tenant would reach it: with its tree, its variables, and the output it would
// apply. The socket's directory is the runner's alone: the rename fails, the other session is
// served by the runner, and the attacker captures nothing.
func TestACommandCannotTakeOverTheSocket(t *testing.T) {
	g := NewWithT(t)
	d := startDeployedRunner(t, 0)
	self := attackTool(t)
	shared := proctest.SharedDir(t)
	ready := filepath.Join(shared, "ready")

	attacker := d.session(t, newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})
	attack := make(chan string, 1)
	go func() {
		out, err := attacker.Run(context.Background(), fluxyaml.Command{Command: `"$ATTACK" attack takeover "$SOCK" "$READY" 3`}, ".",
			map[string]string{"ATTACK": self, "SOCK": d.Socket, "READY": ready})
		if err != nil {
			out = append(out, []byte(err.Error())...)
		}
		attack <- string(out)
	}()
	g.Eventually(ready, 10*time.Second).Should(BeAnExistingFile())

	victim := d.session(t, newTree(t, map[string]string{"secret.yaml": "token: of-the-victim\n"}), runner.Options{Env: map[string]string{"TOKEN": "victim-env"}})
	g.Expect(run(g, victim, `cat secret.yaml; echo "$TOKEN"`, ".", nil)).To(Equal("token: of-the-victim\nvictim-env\n"))

	var out string
	g.Eventually(attack, 15*time.Second).Should(Receive(&out))
	g.Expect(out).To(ContainSubstring("rename: permission denied"), out)
	g.Expect(out).NotTo(ContainSubstring("listen: ok"), out)
	g.Expect(out).NotTo(ContainSubstring("captured"), out)

	// The directory and the socket are as the runner made them: no one but the runner writes the
	// directory, no one but the controller's user connects.
	fi, err := os.Stat(d.socketDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm() & 0o022).To(BeZero())
	g.Expect(fi.Mode() & (os.ModeSetgid | os.ModeSticky)).To(BeZero())
	fi, err = os.Lstat(d.Socket)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode()&os.ModeSocket).NotTo(BeZero(), "the runner's socket is still there")
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
}

// Were the socket replaced all the same (by whoever could write its directory), the controller
// would send nothing to it: it checks that the runner's user serves the socket before it sends
// the tree.
func TestTheControllerSendsNothingToAReplacedSocket(t *testing.T) {
	g := NewWithT(t)
	dir, err := os.MkdirTemp("", "impostor-")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "runner.sock")
	ln, err := net.Listen("unix", socket)
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	received := make(chan int64, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			received <- -1
			return
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		n, _ := io.Copy(io.Discard, conn)
		received <- n
	}()

	// The impostor is this process (uid 0 when root, the tests' user otherwise); the runner the
	// client expects is another user.
	impostor := os.Geteuid()
	c := &runner.Client{Socket: socket, RunnerUID: impostor + 1}
	s, err := c.Session(newTree(t, map[string]string{"secret.yaml": "token: hunter2\n"}), runner.Options{Env: map[string]string{"TOKEN": "x"}})
	g.Expect(err).NotTo(HaveOccurred())
	defer s.Close()
	_, err = s.Run(context.Background(), fluxyaml.Command{Command: "cat secret.yaml"}, ".", nil)
	g.Expect(err).To(MatchError(ContainSubstring("is served by uid")))
	g.Expect(err).To(MatchError(ContainSubstring("nothing was sent")))
	g.Expect(s.Close()).To(Succeed())
	g.Eventually(received, 10*time.Second).Should(Receive(BeZero()), "the impostor received bytes")
}

// A command that connects to the runner's socket gets nothing: the socket is the controller's
// user's alone, and a connection from anyone else (root here, who ignores the socket's mode) is
// closed before the runner makes a directory or takes a user for it.
func TestAConnectionFromAnyoneButTheControllerGetsNothing(t *testing.T) {
	g := NewWithT(t)
	self := attackTool(t)

	// A command of a session of the runner the Deployment runs.
	d := startDeployedRunner(t, 0)
	s := d.session(t, newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})
	out := run(g, s, `"$ATTACK" attack dial "$SOCK"`, ".", map[string]string{"ATTACK": self, "SOCK": d.Socket})
	g.Expect(out).To(Equal("dial: connect: permission denied\n"))

	// A runner whose controller is another user (65532, the manager's uid in the Deployment):
	// this process may connect, but it is not the controller.
	other := startDeployedRunner(t, 65532)
	for range 3 {
		conn := dialRaw(g, other.Socket)
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		n, err := io.Copy(io.Discard, conn)
		_ = conn.Close()
		g.Expect(err).NotTo(HaveOccurred(), "the runner closes the connection")
		g.Expect(n).To(BeZero())
	}
	g.Consistently(func() []string { return other.workdirEntries(g) }, time.Second).Should(BeEmpty(), "the runner made a session for a refused connection")
}

// Two sessions of the runner the Deployment runs, at the same time: one cannot read or change
// the other's files, signal its processes, or reach into its session process; what one leaves
// in the container's shared scratch directories goes when its session ends.
func TestDeployedSessionsCannotReachEachOther(t *testing.T) {
	g := NewWithT(t)
	d := startDeployedRunner(t, 0)
	pids := proctest.SharedDir(t)
	a := d.session(t, newTree(t, map[string]string{"secret.yaml": "token: of-repo-a\n"}), runner.Options{})
	b := d.session(t, newTree(t, map[string]string{"b.yaml": "b: 1\n"}), runner.Options{})

	treeA := strings.TrimSpace(run(g, a, "pwd -P", ".", nil))
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), fluxyaml.Command{Command: `sleep 30 & echo $! > "$PIDS/a"; echo $PPID > "$PIDS/a-job"; wait`}, ".", map[string]string{"PIDS": pids})
		aDone <- err
	}()
	pid := proctest.ReadPid(g, filepath.Join(pids, "a"))
	jobPid := proctest.ReadPid(g, filepath.Join(pids, "a-job"))

	out := run(g, b, `
cat "$A/secret.yaml" 2>&1
{ echo x > "$A/planted.yaml"; } 2>&1
kill -TERM "$PID" 2>&1
ls "/proc/$JOB/fd" 2>&1
ls ../.. 2>&1
echo planted > /dev/shm/sluice-planted-b
true`, ".", map[string]string{"A": treeA, "PID": itoa(pid), "JOB": itoa(jobPid)})
	g.Expect(out).NotTo(ContainSubstring("of-repo-a"))
	g.Expect(strings.Count(out, "Permission denied")).To(BeNumerically(">=", 4), out)
	g.Expect(out).To(ContainSubstring("Operation not permitted"), out)
	g.Expect(proctest.Gone(pid)).To(BeFalse(), "b signalled a's process")
	g.Expect(run(g, a, "ls", ".", nil)).To(Equal("secret.yaml\n"))

	// A session's own process cannot be reached by its own commands either: it is not dumpable.
	own := run(g, b, `ls "/proc/$PPID/fd" 2>&1; true`, ".", nil)
	g.Expect(own).To(ContainSubstring("Permission denied"))

	g.Expect("/dev/shm/sluice-planted-b").To(BeARegularFile())
	g.Expect(b.Close()).To(Succeed())
	g.Eventually(func() bool { _, err := os.Lstat("/dev/shm/sluice-planted-b"); return os.IsNotExist(err) }, 10*time.Second).Should(BeTrue(),
		"what a session left in /dev/shm outlived it")
	g.Expect(a.Close()).To(Succeed())
	g.Eventually(aDone, 10*time.Second).Should(Receive())
}
