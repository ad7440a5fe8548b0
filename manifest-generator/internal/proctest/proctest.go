// Package proctest checks, in tests, that the processes a command started are gone.
package proctest

import (
	"os"
	"strconv"
	"strings"

	. "github.com/onsi/gomega"
)

// Gone reports whether pid has exited: no such process, or a zombie nobody reaped yet (a
// container's init may not reap) and none of whose threads runs. A process whose main thread
// ended (pthread_exit) shows as a zombie while its other threads go on: it is not gone.
func Gone(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	if !exited(dir + "/stat") {
		return false
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return true
	}
	for _, task := range tasks {
		if !exited(dir + "/task/" + task.Name() + "/stat") {
			return false
		}
	}
	return true
}

// exited reports whether the task of a /proc stat file is gone or a zombie.
func exited(statFile string) bool {
	stat, err := os.ReadFile(statFile)
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndex(s, ")")
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// LiveProcessesOf lists the processes of which uid is the real or effective user id and a
// thread still runs.
func LiveProcessesOf(uid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "Uid:" && (f[1] == strconv.Itoa(uid) || f[2] == strconv.Itoa(uid)) && !Gone(pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// ReadPid waits for file to hold a process id (written by the command under test) and returns it.
func ReadPid(g Gomega, file string) int {
	var pid int
	g.Eventually(func() error {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err
	}).Should(Succeed())
	return pid
}
