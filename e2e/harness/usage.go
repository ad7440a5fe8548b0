package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Usage is what a process used so far, read from /proc.
type Usage struct {
	// PeakRSS is the most resident memory the process has had, in bytes (VmHWM).
	PeakRSS int64
	// CPU is the user and system time the process has used.
	CPU time.Duration
}

// clockTick is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// Usage reads the current process's usage from /proc.
func (c *Controller) Usage() (Usage, error) {
	pid := c.Pid()
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	s := bufio.NewScanner(bytes.NewReader(status))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return u, fmt.Errorf("VmHWM of %d: %w", pid, err)
			}
			u.PeakRSS = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name, in parentheses, may hold spaces: the fields start after the last ')'.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return u, fmt.Errorf("short /proc/%d/stat", pid)
	}
	// utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
	for _, f := range fields[11:13] {
		ticks, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return u, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		u.CPU += time.Duration(ticks) * clockTick
	}
	return u, nil
}
