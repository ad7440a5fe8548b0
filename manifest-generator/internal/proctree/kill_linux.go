package proctree

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// maxRounds bounds KillDescendants: each round kills what it finds, and a process can only
// fork until its SIGKILL is delivered, so a handful of rounds reach an empty tree.
const maxRounds = 100

// KillDescendants sends SIGKILL to every descendant of pid except the subtrees rooted at the
// processes in keep, and reaps those of them that are (or become) children of the caller. It
// repeats until no descendant is left, so children forked while it runs die too. pid is
// normally the caller, a child subreaper (BecomeSubreaper): then orphans are its children and
// nothing escapes. It returns the number of processes killed.
//
// Reaping uses wait4 on the killed pids only, never wait4(-1), so it does not take the exit
// status of a child the caller still waits for (an exec.Cmd).
func KillDescendants(pid int, keep ...int) int {
	killed := 0
	self := os.Getpid()
	for round := 0; round < maxRounds; round++ {
		victims := descendants(pid, keep)
		if len(victims) == 0 {
			return killed
		}
		for _, v := range victims {
			if syscall.Kill(v, syscall.SIGKILL) == nil {
				killed++
			}
		}
		for _, v := range victims {
			if parentOf(v) == self {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(v, &ws, 0, nil)
			}
		}
	}
	return killed
}

// descendants lists the living (not zombie) descendants of root, leaving out the subtrees of
// keep. Zombies are left out: they are dead, and are reaped once their parent is.
func descendants(root int, keep []int) []int {
	children := map[int][]int{}
	zombie := map[int]bool{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := stat(pid)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		if state == 'Z' || state == 'X' {
			zombie[pid] = true
		}
	}
	skip := map[int]bool{}
	for _, k := range keep {
		skip[k] = true
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if skip[c] {
				continue
			}
			if !zombie[c] {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	// A zombie child of the caller is reaped here: it is dead, but it holds its pid.
	self := os.Getpid()
	for _, c := range children[self] {
		if zombie[c] && !skip[c] && root == self {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(c, &ws, syscall.WNOHANG, nil)
		}
	}
	return out
}

// parentOf is the parent pid of pid, or 0 when it is gone.
func parentOf(pid int) int {
	ppid, _, _ := stat(pid)
	return ppid
}

// stat reads the parent pid and state of pid from /proc/<pid>/stat. The command name, in
// parentheses, may hold spaces and parentheses: the fields follow its last ')'.
func stat(pid int) (ppid int, state byte, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+4 {
		return 0, 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, 0, false
	}
	return ppid, fields[0][0], true
}
