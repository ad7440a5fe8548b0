package proctree

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Process is a process (a thread group) as /proc shows it.
type Process struct {
	Pid, PPid int
	// State is the state letter of its main thread (R, S, D, Z...).
	State byte
	// Live is set while a thread of the process runs. A process whose main thread ended
	// (pthread_exit) shows as a zombie (Z) while its other threads go on: it is live, and
	// kill(pid, SIGKILL) reaches those threads. A zombie without threads is dead: it only
	// waits for its parent to reap it.
	Live bool
}

// Table is a snapshot of the processes of /proc.
type Table []Process

// Snapshot lists the processes of /proc (those of the caller's pid namespace). A process that
// ends meanwhile is left out.
func Snapshot() Table {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	t := make(Table, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProcess(pid); ok {
			t = append(t, p)
		}
	}
	return t
}

// OfUser returns the processes that have uid as one of their user ids (UIDs), dead zombies
// included (their Live is false).
func (t Table) OfUser(uid int) []Process {
	var out []Process
	for _, p := range t {
		if ids, ok := UIDs(p.Pid); ok && slices.Contains(ids[:], uid) {
			out = append(out, p)
		}
	}
	return out
}

// Descendants returns the descendants of root, dead zombies included, leaving out the
// subtrees rooted at the pids of keep.
func (t Table) Descendants(root int, keep ...int) []Process {
	children := map[int][]int{}
	byPid := make(map[int]Process, len(t))
	for _, p := range t {
		children[p.PPid] = append(children[p.PPid], p.Pid)
		byPid[p.Pid] = p
	}
	skip := map[int]bool{}
	for _, k := range keep {
		skip[k] = true
	}
	var out []Process
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if skip[c] || c == root {
				continue
			}
			out = append(out, byPid[c])
			queue = append(queue, c)
		}
	}
	return out
}

// UIDs reads the real, effective, saved and filesystem user ids of pid from
// /proc/<pid>/status (whose Name line escapes newlines: no line of it can be forged by a
// command's name). A process holds the rights of each of them, or may take them back.
func UIDs(pid int) (ids [4]int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ids, false
	}
	for line := range bytes.Lines(data) {
		value, found := bytes.CutPrefix(line, []byte("Uid:"))
		if !found {
			continue
		}
		f := strings.Fields(string(value))
		if len(f) != len(ids) {
			return ids, false
		}
		for i := range f {
			if ids[i], err = strconv.Atoi(f[i]); err != nil {
				return ids, false
			}
		}
		return ids, true
	}
	return ids, false
}

// readProcess reads pid's parent and state from /proc/<pid>/stat, and whether a thread of it
// is live.
func readProcess(pid int) (Process, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Process{}, false
	}
	// The command name, in parentheses, may hold spaces and parentheses: the fields follow
	// its last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Process{}, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 || fields[0] == "" {
		return Process{}, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return Process{}, false
	}
	p := Process{Pid: pid, PPid: ppid, State: fields[0][0]}
	p.Live = !dead(p.State) || liveThread(pid)
	return p, true
}

// dead reports whether a state letter is that of a task that has exited.
func dead(state byte) bool { return state == 'Z' || state == 'X' }

// liveThread reports whether a thread of pid other than its main one is still running.
func liveThread(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, task := range tasks {
		if task.Name() == strconv.Itoa(pid) {
			continue
		}
		if state, ok := taskState(dir + "/" + task.Name() + "/stat"); ok && !dead(state) {
			return true
		}
	}
	return false
}

// taskState reads the state letter of /proc/.../stat: it follows the command name's last ')'.
func taskState(path string) (byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || len(data) < i+3 {
		return 0, false
	}
	return data[i+2], true
}
