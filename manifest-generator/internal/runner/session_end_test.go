package runner_test

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
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// What a session leaves behind must not reach the next session of the same user: these tests
// run a runner with the deployed one's rights (deployed_test.go), whose sessions share one
// user, so that the next session gets the user the first one had.

// spySource is a command that leaves the session: it forks a process that leaves its process
// group (setsid) and ends its main thread (pthread_exit), so that /proc shows it as a zombie,
// while a second thread appends, every 20 ms, "alive" and the environment of every process it
// may read (those of its user) to the file argv[1]. The command prints that process's pid once
// the file exists.
const spySource = `#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *out;

static void *spy(void *arg) {
	for (;;) {
		FILE *f = fopen(out, "a");
		if (f) {
			fprintf(f, "alive\n");
			DIR *d = opendir("/proc");
			struct dirent *e;
			while (d && (e = readdir(d))) {
				int pid = atoi(e->d_name);
				char path[64], buf[4096];
				ssize_t n;
				if (pid <= 0 || pid == getpid()) continue;
				snprintf(path, sizeof path, "/proc/%d/environ", pid);
				int fd = open(path, O_RDONLY);
				if (fd < 0) continue;
				while ((n = read(fd, buf, sizeof buf)) > 0) {
					for (ssize_t i = 0; i < n; i++) if (buf[i] == 0) buf[i] = '\n';
					fwrite(buf, 1, n, f);
				}
				close(fd);
			}
			if (d) closedir(d);
			fclose(f);
		}
		usleep(20000);
	}
	return NULL;
}

int main(int argc, char **argv) {
	pthread_t t;
	if (argc != 2) return 2;
	out = argv[1];
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid > 0) {
		for (int i = 0; i < 500; i++) {
			if (access(out, F_OK) == 0) { printf("%d\n", pid); return 0; }
			usleep(10000);
		}
		return 1;
	}
	setsid();
	int null = open("/dev/null", O_RDWR);
	dup2(null, 0); dup2(null, 1); dup2(null, 2);
	if (pthread_create(&t, NULL, spy, NULL) != 0) return 1;
	pthread_exit(NULL);
}
`

// oneUser is the only user of the runners of these tests, so that sessions follow one another
// as the same user (not one of the users of the package's other runners).
const oneUser = 65720

// A process of a session whose main thread ended, and which left the session's process group,
// runs on as a zombie of /proc: it must be killed with its session all the same, before the
// session's user is given to the next session, whose environment (and tree, and HOME) it
// would otherwise read as the same user.
func TestSessionLeavesNoProcessToTheNext(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	spy := proctest.CompileC(t, "spy", spySource)
	d := startDeployedRunner(t, 0, "--job-users="+strconv.Itoa(oneUser))
	report := filepath.Join(proctest.SharedDir(t), "report")
	local := newTree(t, map[string]string{"a.yaml": "a: 1\n"})

	first := d.session(t, local, runner.Options{})
	out := strings.Fields(run(g, first, `"$SPY" "$REPORT"; id -u`, ".", map[string]string{"SPY": spy, "REPORT": report}))
	g.Expect(out).To(HaveLen(2))
	pid, err := strconv.Atoi(out[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out[1]).To(Equal(strconv.Itoa(oneUser)))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	g.Expect(first.Close()).To(Succeed())

	// Once the session ended, nothing of its user runs.
	g.Eventually(func() []int { return proctest.LiveProcessesOf(oneUser) }, 5*time.Second).Should(BeEmpty(),
		"processes of the ended session's user run on (the spy is %d)", pid)
	g.Expect(proctest.Gone(pid)).To(BeTrue())

	// The next session, as the same user, is not read.
	second := d.session(t, local, runner.Options{Env: map[string]string{"SECRET": "of-the-second-session"}})
	g.Expect(run(g, second, `id -u; sleep 0.3`, ".", nil)).To(Equal(strconv.Itoa(oneUser) + "\n"))
	spied, err := os.ReadFile(report)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(spied)).To(ContainSubstring("alive"), "the spy never ran")
	g.Expect(string(spied)).NotTo(ContainSubstring("of-the-second-session"))
	g.Consistently(func() int { return len(readOrEmpty(report)) }, 200*time.Millisecond, 50*time.Millisecond).Should(Equal(len(spied)),
		"the spy still writes")
	g.Expect(second.Close()).To(Succeed())
	g.Eventually(func() []int { return proctest.LiveProcessesOf(oneUser) }, 5*time.Second).Should(BeEmpty())
}

// System V IPC objects live in the pod's IPC namespace, not in the session's files: those a
// session made (here a 512 MiB shared memory segment, a semaphore set and a message queue) go
// with it. The runner has the deployed rights, without CAP_SYS_ADMIN: it removes them as the
// session's user.
func TestSessionLeavesNoIPCObjects(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	if _, err := exec.LookPath("ipcmk"); err != nil {
		t.Fatal("ipcmk (util-linux) is needed to make System V IPC objects")
	}
	d := startDeployedRunner(t, 0, "--job-users="+strconv.Itoa(oneUser))
	s := d.session(t, newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})
	uid := strings.TrimSpace(run(g, s, `ipcmk -M 536870912 >/dev/null && ipcmk -S 1 >/dev/null && ipcmk -Q >/dev/null && id -u`, ".", nil))
	g.Expect(uid).To(Equal(strconv.Itoa(oneUser)))
	made := sysvipcOf(t, oneUser)
	t.Cleanup(func() {
		for _, o := range sysvipcOf(t, oneUser) {
			kind, id, _ := strings.Cut(o, " ")
			_ = exec.Command("ipcrm", "-"+map[string]string{"shm": "m", "sem": "s", "msg": "q"}[kind], id).Run()
		}
	})
	g.Expect(made).To(HaveLen(3))
	g.Expect(made).To(ContainElement(HavePrefix("shm ")))

	g.Expect(s.Close()).To(Succeed())
	g.Eventually(func() []string { return sysvipcOf(t, oneUser) }, 5*time.Second).Should(BeEmpty(), "System V IPC objects outlived their session")
}

// sysvipcOf lists the System V IPC objects whose owner or creator is uid, as "shm <id>", "sem
// <id>" or "msg <id>".
func sysvipcOf(t *testing.T, uid int) []string {
	t.Helper()
	var out []string
	for _, kind := range []string{"shm", "sem", "msg"} {
		data, err := os.ReadFile("/proc/sysvipc/" + kind)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		col := map[string]int{}
		for i, name := range strings.Fields(lines[0]) {
			col[name] = i
		}
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			if f[col["uid"]] == strconv.Itoa(uid) || f[col["cuid"]] == strconv.Itoa(uid) {
				out = append(out, kind+" "+f[1])
			}
		}
	}
	return out
}

// readOrEmpty is the content of file, or nothing.
func readOrEmpty(file string) []byte {
	data, _ := os.ReadFile(file)
	return data
}
