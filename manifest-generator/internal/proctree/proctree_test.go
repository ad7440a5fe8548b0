package proctree_test

// These tests spawn process trees from the test process and kill them with KillDescendants,
// the test process being the caller as the runner's job is. KillDescendants(os.Getpid()) kills
// every child of the test binary: no test here may run in parallel (no t.Parallel), and each
// cleans up what it spawned.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

// spawn starts sh -c script with $1 a new directory for pid files, and returns the process and
// that directory. Whatever is left of it is killed when the test ends.
func spawn(t *testing.T, script string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", script, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The pids it wrote, then the shell; Wait releases it (an error when KillDescendants
		// reaped it already).
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			if data, err := os.ReadFile(f); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, dir
}

// tree is a child that starts a setsid grandchild (with a child of its own, a great-grandchild)
// and a background grandchild, all writing their pid, then stays.
const tree = `setsid sh -c 'sleep 299 & echo $! > "$0/great"; echo $$ > "$0/setsid"; exec sleep 300' "$1" &
sleep 301 & echo $! > "$1/background"
exec sleep 302`

// treePids waits for the pids the processes of tree write to dir: setsid grandchild, background
// grandchild, great-grandchild.
func treePids(g Gomega, dir string) []int {
	return []int{
		proctest.ReadPid(g, filepath.Join(dir, "setsid")),
		proctest.ReadPid(g, filepath.Join(dir, "background")),
		proctest.ReadPid(g, filepath.Join(dir, "great")),
	}
}

// reaped reports whether pid is gone and reaped (no zombie left in /proc).
func reaped(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return os.IsNotExist(err)
}

// parent is pid's parent process id.
func parent(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// After BecomeSubreaper, an orphan of the caller's subtree (a double fork) is reparented to the
// caller rather than to init: it stays a descendant that KillDescendants finds.
func TestBecomeSubreaperAdoptsOrphans(t *testing.T) {
	g := NewWithT(t)
	g.Expect(proctree.BecomeSubreaper()).To(Succeed())
	cmd, dir := spawn(t, `(sh -c 'echo $$ > "$0/orphan"; exec sleep 300' "$1" &); exec sleep 301`)
	orphan := proctest.ReadPid(g, filepath.Join(dir, "orphan"))
	// Its parent, the subshell, exited at once: the orphan is the test process's child now.
	g.Eventually(func() int { return parent(t, orphan) }).Should(Equal(os.Getpid()))
	g.Expect(parent(t, cmd.Process.Pid)).To(Equal(os.Getpid()))

	// Killed with the rest of the caller's descendants, and reaped: no zombie is left.
	g.Expect(proctree.KillDescendants(os.Getpid())).To(BeNumerically(">=", 2))
	g.Expect(reaped(orphan)).To(BeTrue(), "orphan %d not killed or not reaped", orphan)
	g.Expect(reaped(cmd.Process.Pid)).To(BeTrue(), "child %d not killed or not reaped", cmd.Process.Pid)
}

// KillDescendants kills a whole tree, what left the process group (setsid) included, and counts
// the processes it killed.
func TestKillDescendantsKillsTheWholeTree(t *testing.T) {
	g := NewWithT(t)
	g.Expect(proctree.BecomeSubreaper()).To(Succeed())
	cmd, dir := spawn(t, tree)
	pids := append(treePids(g, dir), cmd.Process.Pid)
	// The child has exec'd its final sleep once it wrote its grandchild's pid.
	g.Eventually(func() string { return comm(cmd.Process.Pid) }).Should(Equal("sleep"))

	g.Expect(proctree.KillDescendants(os.Getpid())).To(BeNumerically(">=", len(pids)))
	for _, pid := range pids {
		g.Expect(proctest.Gone(pid)).To(BeTrue(), "%d survived", pid)
	}
	// The child was the caller's: it is reaped, not left a zombie.
	g.Expect(reaped(cmd.Process.Pid)).To(BeTrue())
	// Nothing is left to kill.
	g.Expect(proctree.KillDescendants(os.Getpid())).To(Equal(0))
}

// The root of the tree is not its own descendant: KillDescendants(pid) spares pid and kills
// everything below it, however deep (here the caller adopts no orphan that it would miss).
func TestKillDescendantsSparesTheRoot(t *testing.T) {
	g := NewWithT(t)
	cmd, dir := spawn(t, tree)
	pids := treePids(g, dir)

	g.Expect(proctree.KillDescendants(cmd.Process.Pid)).To(BeNumerically(">=", len(pids)))
	for _, pid := range pids {
		g.Eventually(func() bool { return proctest.Gone(pid) }).Should(BeTrue(), "%d survived", pid)
	}
	g.Expect(proctest.Gone(cmd.Process.Pid)).To(BeFalse(), "the root was killed")
}

// The subtrees of the keep pids (the runner's other sessions) survive; everything else dies.
func TestKillDescendantsSparesKeep(t *testing.T) {
	g := NewWithT(t)
	g.Expect(proctree.BecomeSubreaper()).To(Succeed())
	kept, keptDir := spawn(t, tree)
	victim, victimDir := spawn(t, tree)
	keptPids := append(treePids(g, keptDir), kept.Process.Pid)
	victimPids := append(treePids(g, victimDir), victim.Process.Pid)

	g.Expect(proctree.KillDescendants(os.Getpid(), kept.Process.Pid)).To(BeNumerically(">=", len(victimPids)))
	for _, pid := range victimPids {
		g.Expect(proctest.Gone(pid)).To(BeTrue(), "%d survived", pid)
	}
	for _, pid := range keptPids {
		g.Expect(proctest.Gone(pid)).To(BeFalse(), "%d of a kept subtree was killed", pid)
	}
	// Kept, not merely missed: without keep they die too.
	g.Expect(proctree.KillDescendants(os.Getpid())).To(BeNumerically(">=", len(keptPids)))
	for _, pid := range keptPids {
		g.Expect(proctest.Gone(pid)).To(BeTrue(), "%d survived", pid)
	}
}

// comm is the command name of pid.
func comm(pid int) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(data))
}

// mainThreadEnds is a process that leaves its session (setsid) and ends its main thread
// (pthread_exit) while another thread writes its pid to argv[1] and stays: /proc then shows
// the process as a zombie (Z), yet it runs.
const mainThreadEnds = `#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static const char *pidfile;

static void *stay(void *arg) {
	FILE *f = fopen(pidfile, "w");
	if (f) { fprintf(f, "%d\n", getpid()); fclose(f); }
	for (;;) pause();
	return NULL;
}

int main(int argc, char **argv) {
	pthread_t t;
	if (argc != 2) return 2;
	pidfile = argv[1];
	setsid();
	if (pthread_create(&t, NULL, stay, NULL) != 0) return 1;
	pthread_exit(NULL);
}
`

// zombieRunning waits until pid shows as a zombie that still runs a thread.
func zombieRunning(g Gomega, pid int) {
	g.Eventually(func() string {
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
			return s[i+2 : i+3]
		}
		return ""
	}).Should(Equal("Z"))
	g.Expect(proctest.Gone(pid)).To(BeFalse(), "its thread does not run")
}

// A process whose main thread ended shows as a zombie, but its other threads run: it is killed
// with the rest of the tree, not skipped as dead.
func TestKillDescendantsKillsProcessesWhoseMainThreadEnded(t *testing.T) {
	g := NewWithT(t)
	bin := proctest.CompileC(t, "main-thread-ends", mainThreadEnds)
	g.Expect(proctree.BecomeSubreaper()).To(Succeed())
	cmd, dir := spawn(t, `"`+bin+`" "$1/zombie" & exec sleep 302`)
	pid := proctest.ReadPid(g, filepath.Join(dir, "zombie"))
	zombieRunning(g, pid)

	g.Expect(proctree.KillDescendants(os.Getpid())).To(BeNumerically(">=", 2))
	g.Expect(proctest.Gone(pid)).To(BeTrue(), "%d runs on", pid)
	g.Expect(reaped(pid)).To(BeTrue(), "%d was not reaped", pid)
	g.Expect(reaped(cmd.Process.Pid)).To(BeTrue())
}

// KillUser kills every process of a user, wherever it is in the process tree and whatever its
// state (one whose main thread ended included), and spares the processes of other users.
func TestKillUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the processes to kill run as another user")
	}
	g := NewWithT(t)
	const uid = 65590
	bin := proctest.CompileC(t, "main-thread-ends", mainThreadEnds)
	dir := proctest.SharedDir(t)
	// Not the caller's children: the tree of uid hangs below a shell of the caller's user,
	// which KillUser must spare.
	script := `setpriv --reuid=` + strconv.Itoa(uid) + ` --regid=` + strconv.Itoa(uid) + ` --clear-groups sh -c '
		"$0" "$1/zombie" &
		setsid sh -c "echo \$\$ > $1/setsid; exec sleep 300" &
		echo $$ > "$1/shell"; exec sleep 301' "` + bin + `" "` + dir + `" &
		echo $$ > "` + dir + `/root"; exec sleep 303`
	other := exec.Command("/bin/sh", "-c", script)
	g.Expect(other.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = other.Process.Kill()
		_ = other.Wait()
		proctree.KillUser(uid, time.Second)
	})
	victims := []int{
		proctest.ReadPid(g, filepath.Join(dir, "zombie")),
		proctest.ReadPid(g, filepath.Join(dir, "setsid")),
		proctest.ReadPid(g, filepath.Join(dir, "shell")),
	}
	zombieRunning(g, victims[0])
	g.Expect(proctest.LiveProcessesOf(uid)).To(ConsistOf(victims))

	g.Expect(proctree.KillUser(uid, 5*time.Second)).To(BeEmpty())
	g.Expect(proctest.LiveProcessesOf(uid)).To(BeEmpty())
	for _, pid := range victims {
		g.Expect(proctest.Gone(pid)).To(BeTrue(), "%d runs on", pid)
	}
	g.Expect(proctest.Gone(other.Process.Pid)).To(BeFalse(), "a process of another user was killed")
}
