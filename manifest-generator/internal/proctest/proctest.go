// Package proctest checks, in tests, that the processes a command started are gone.
package proctest

import (
	"os"
	"strconv"
	"strings"

	. "github.com/onsi/gomega"
)

// Gone reports whether pid has exited: no such process, or a zombie nobody reaped yet (a
// container's init may not reap).
func Gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndex(s, ")")
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
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
