package proctree

import (
	"os"
	"syscall"
	"time"
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
// A process counts as long as one of its threads runs: one whose main thread ended
// (pthread_exit) shows as a zombie, yet its other threads go on until it is killed.
//
// Reaping uses wait4 on the killed pids only, never wait4(-1), so it does not take the exit
// status of a child the caller still waits for (an exec.Cmd).
func KillDescendants(pid int, keep ...int) int {
	killed := 0
	self := os.Getpid()
	for round := 0; round < maxRounds; round++ {
		var victims []int
		for _, p := range Snapshot().Descendants(pid, keep...) {
			switch {
			case p.Live:
				victims = append(victims, p.Pid)
			case p.PPid == self && pid == self:
				// Dead, but it holds its pid until its parent, the caller, reaps it.
				reap(p.Pid, syscall.WNOHANG)
			}
		}
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
				reap(v, 0)
			}
		}
	}
	return killed
}

// KillUser sends SIGKILL to every process that has uid as one of its user ids (UIDs: real,
// effective, saved or filesystem), whatever its state or its place in the process tree, and
// repeats until none of them is left or timeout has passed. The dead zombies of uid whose
// parent is the caller are reaped; those of other parents are dead and left to them. It
// returns the pids still running at the timeout (a process stuck in the kernel, as on a hung
// mount, dies only when the kernel lets it): nil when uid has no process left.
//
// The caller needs the right to signal uid's processes (CAP_KILL, or uid itself; the caller's
// own process is spared).
func KillUser(uid int, timeout time.Duration) []int {
	self := os.Getpid()
	deadline := time.Now().Add(timeout)
	pause := 2 * time.Millisecond
	for {
		var live []int
		for _, p := range Snapshot().OfUser(uid) {
			switch {
			case p.Pid == self:
			case p.Live:
				_ = syscall.Kill(p.Pid, syscall.SIGKILL)
				live = append(live, p.Pid)
			case p.PPid == self:
				reap(p.Pid, syscall.WNOHANG)
			}
		}
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return live
		}
		// SIGKILL takes effect when the threads next leave the kernel: give them the time.
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// reap waits for pid, a child of the caller, and releases it.
func reap(pid, options int) {
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, options, nil)
}

// parentOf is the parent pid of pid, or 0 when it is gone.
func parentOf(pid int) int {
	p, ok := readProcess(pid)
	if !ok {
		return 0
	}
	return p.PPid
}
