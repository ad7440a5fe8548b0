package dependency

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The TestMain of this package starts etcd and a kube-apiserver, in every process of the test
// binary, fuzz workers included. Two things go wrong there without help:
//   - a worker talks to its coordinator over descriptors 3 to 5, which it does not mark
//     close-on-exec: etcd and the API server would inherit them and, outliving a worker that
//     crashed, leave the coordinator waiting for ever instead of reporting the crash;
//   - the coordinator kills a worker one second after asking it to stop, before TestMain has
//     stopped etcd, which would keep running.
//
// So a fuzz worker marks those descriptors close-on-exec, and starts a reaper (this binary
// again) that kills the children the worker leaves behind.

const reaperEnv = "SLUICE_FUZZ_REAPER"

func init() {
	if w := os.Getenv(reaperEnv); w != "" {
		pid, _ := strconv.Atoi(w)
		reapChildren(pid)
		os.Exit(0)
	}
	if !slices.Contains(os.Args[1:], "-test.fuzzworker") {
		return
	}
	for fd := 3; fd <= 5; fd++ {
		syscall.CloseOnExec(fd)
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	reaper := exec.Command(exe)
	reaper.Env = append(os.Environ(), reaperEnv+"="+strconv.Itoa(os.Getpid()))
	reaper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not stopped by a ^C meant for the worker
	_ = reaper.Start()
}

// reapChildren follows the children of the worker pid while it lives, then kills them and their
// process groups (etcd and the API server each lead one).
func reapChildren(worker int) {
	var children []int
	for processAlive(worker) {
		children = childrenOf(worker)
		time.Sleep(time.Second)
	}
	for _, c := range children {
		if c != os.Getpid() {
			_ = syscall.Kill(-c, syscall.SIGKILL)
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	}
}

// processAlive tells a process that exists and is not a zombie, from /proc/<pid>/stat.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command, which may hold spaces: state, ppid, ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
