package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The limits of a session pod are the kubelet's and the kernel's, not the runner's: a command
// that passes them is killed by the kernel (memory) or gets ENOSPC (the pod's files, in memory).
// The session process says so, naming the controller's flags, instead of a bare "signal:
// killed" or "No space left on device".

// oomCounters are where the kernel counts the out-of-memory kills of the container's cgroup, as
// the container sees it: cgroup v2, then v1.
var oomCounters = []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"}

// oomKills is the number of processes of the container the kernel killed for its memory limit;
// -1 when unknown.
func oomKills() int64 {
	for _, p := range oomCounters {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				_ = f.Close()
				if err != nil {
					return -1
				}
				return n
			}
		}
		_ = f.Close()
	}
	return -1
}

// minFree is the free room below which the session's disk counts as full.
const minFree = 1 << 20

// podWatch watches a running command of a session pod: the container's out-of-memory kills, and
// whether the session's files filled its disk at any moment (files deleted while open free
// their room when the command ends, so a look afterwards would miss them).
type podWatch struct {
	dir      string
	ooms     int64
	diskFull atomic.Bool
	size     atomic.Int64
}

// diskPollInterval is how often a session pod's disk is looked at (one statfs).
const diskPollInterval = 50 * time.Millisecond

// watchPod starts watching until ctx ends.
func watchPod(ctx context.Context, dir string) *podWatch {
	w := &podWatch{dir: dir, ooms: oomKills()}
	go func() {
		t := time.NewTicker(diskPollInterval)
		defer t.Stop()
		for {
			w.checkDisk()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *podWatch) checkDisk() {
	var st unix.Statfs_t
	if err := unix.Statfs(w.dir, &st); err == nil && int64(st.Bavail)*st.Bsize < minFree {
		w.size.Store(int64(st.Blocks) * st.Bsize)
		w.diskFull.Store(true)
	}
}

// explain names the pod's limit a failed command ran into: its memory when the kernel killed a
// process of the container since the command started, its disk when the session's files filled
// it.
func (w *podWatch) explain(out *runResponse) {
	if !out.Failed {
		return
	}
	w.checkDisk()
	if now := oomKills(); w.ooms >= 0 && now > w.ooms {
		out.Error = fmt.Sprintf("the session ran out of memory: the kernel killed %d of its processes (%s); the manifest-generator's --session-memory sets the limit", now-w.ooms, out.Error)
		return
	}
	// A file deleted while open frees its room as soon as its command ends, so the disk may
	// have been full between two looks: the command's own "No space left on device" says so.
	if w.diskFull.Load() || strings.Contains(strings.ToLower(out.Stderr), syscall.ENOSPC.Error()) {
		var st unix.Statfs_t
		size := w.size.Load()
		if size == 0 && unix.Statfs(w.dir, &st) == nil {
			size = int64(st.Blocks) * st.Bsize
		}
		out.Error = fmt.Sprintf("the session's disk is full: its files may take %d bytes, the manifest-generator's --session-disk (%s)", size, out.Error)
	}
}

// inPod names the manifest-generator's flag in a disk limit error of a session pod: the pod's
// disk (--session-disk) is the limit its session process measures against.
func inPod(err error) error {
	var dl *DiskLimitError
	if !errors.As(err, &dl) || dl.What != "bytes" {
		return err
	}
	c := *dl
	c.Whose, c.Flag = "the session pod's", "session-disk"
	return &c
}
