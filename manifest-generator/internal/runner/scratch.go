package runner

import (
	"os"
	"path/filepath"
	"syscall"
)

// sharedScratchDirs are the directories every user of a container may write (sticky, like
// /tmp). Sessions get their own TMPDIR, but a command may still leave files there on purpose:
// they go with its session, so that nothing one session writes is there for the next.
var sharedScratchDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// removeFilesOf removes the entries of dirs that belong to uid (a session's user, whose
// processes are all gone). Directories that are not world-writable are left alone: no session
// could write there.
func removeFilesOf(uid int, dirs []string) {
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o002 == 0 {
			continue
		}
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			p := filepath.Join(dir, de.Name())
			fi, err := os.Lstat(p)
			if err != nil {
				continue
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
				_ = RemoveTree(p)
			}
		}
	}
}
