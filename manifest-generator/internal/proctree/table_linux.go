package proctree

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Process is a process (a thread group) as /proc shows it.
type Process struct {
	Pid, PPid int
	// State is the state letter of its main thread (R, S, D, Z...).
	State byte
	// UIDs are its real, effective, saved and filesystem user ids.
	UIDs [4]int
	// Live is set while a thread of the process runs. A process whose main thread ended
	// (pthread_exit) shows as a zombie (Z) while its other threads go on: it is live, and
	// kill(pid, SIGKILL) reaches those threads. A zombie without threads is dead: it only
	// waits for its parent to reap it.
	Live bool
}

// HasUID reports whether uid is one of p's user ids (real, effective, saved or filesystem):
// the process then holds that user's rights, or may take them back.
func (p Process) HasUID(uid int) bool {
	for _, u := range p.UIDs {
		if u == uid {
			return true
		}
	}
	return false
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

// OfUser returns the processes that have uid as one of their user ids, dead zombies included
// (their Live is false).
func (t Table) OfUser(uid int) []Process {
	var out []Process
	for _, p := range t {
		if p.HasUID(uid) {
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

// readProcess reads pid's parent, state and user ids from /proc/<pid>/status (whose Name
// line escapes newlines, so no line of it can be forged by a command's name), and whether a
// thread of it is live.
func readProcess(pid int) (Process, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Process{}, false
	}
	p := Process{Pid: pid}
	var haveState, havePPid, haveUID bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "State":
			if value != "" {
				p.State, haveState = value[0], true
			}
		case "PPid":
			p.PPid, err = strconv.Atoi(value)
			havePPid = err == nil
		case "Uid":
			f := strings.Fields(value)
			if len(f) != 4 {
				return Process{}, false
			}
			haveUID = true
			for i := range f {
				if p.UIDs[i], err = strconv.Atoi(f[i]); err != nil {
					haveUID = false
				}
			}
		}
	}
	if !haveState || !havePPid || !haveUID {
		return Process{}, false
	}
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

// taskState reads the state letter of /proc/.../stat. The command name, in parentheses, may
// hold spaces and parentheses: the state follows its last ')'.
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
