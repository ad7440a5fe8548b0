package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

// A file deleted while a process holds it open keeps its blocks until it is closed, and no walk
// of the session's directory finds it: the disk meter looks for such files in the open
// descriptors of the session's processes (/proc/<pid>/task/<tid>/fd, whose entries stat
// follows to the file, deleted or not), and counts each regular file without a link left once,
// by its blocks. A file may also be held by a mapping alone (mmap, then close and unlink): its
// size cannot be read then (only CAP_SYS_ADMIN may follow /proc/<pid>/map_files), so a mapping
// of a deleted file of the session's filesystem counts as over the limit. The job runs as the
// session's user, so it may read the descriptors and mappings of the session's processes,
// unless a process made itself undumpable (prctl PR_SET_DUMPABLE): the kernel then shows them
// to no one but a CAP_SYS_PTRACE holder, and that counts as over the limit too. Both count
// once they last a second (hiddenGrace).

// sessionUser is the user of the session this process serves, when that user is the
// session's own (Limits.apply sets it in the session's process): then every process of that
// user is the session's. -1 when the session runs as the runner's own user.
var sessionUser = -1

// hiddenProcess is a process of the session that holds files the meter cannot measure.
type hiddenProcess struct {
	pid  int
	name string
	// what it hides, for the error: "hides its open files..." or "maps ..."
	what string
}

// fileID identifies a file across processes and descriptors.
type fileID struct{ dev, ino uint64 }

// kcmpFiles is KCMP_FILES: kcmp compares two tasks' descriptor tables.
const kcmpFiles = 2

// openUnlinkedBytes returns the bytes of the regular files that the session's processes hold
// open though they have no link left (each file once), and the processes that hold files it
// cannot measure: their descriptors cannot be read, or they map a deleted file of the
// filesystem of the session's directory dir. It stops counting past budget.
func openUnlinkedBytes(budget int64, dir string) (int64, []hiddenProcess) {
	where := sessionFS{dir: dir}
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			where.dev = uint64(st.Dev)
		}
	}
	seen := map[fileID]int64{}
	var total int64
	var hidden []hiddenProcess
	for _, pid := range sessionProcesses() {
		if what := unlinkedOpenBy(pid, where, seen, &total); what != "" {
			hidden = append(hidden, hiddenProcess{pid: pid, name: commOf(pid), what: what})
		}
		if total > budget {
			break
		}
	}
	return total, hidden
}

// sessionProcesses lists the processes of the session but the job itself. With a user of its
// own, they are the processes of that user: /proc/<pid> belongs to a process's effective user
// when the process is dumpable, to root when it is not, so only the user ids of root's are read
// (from /proc/<pid>/status, the dearer read), every 250 ms. Without, they are the job's
// descendants (the job is a child subreaper: nothing a command starts leaves its tree while it
// runs).
func sessionProcesses() []int {
	self := os.Getpid()
	var pids []int
	if sessionUser < 0 {
		for _, p := range proctree.Snapshot().Descendants(self) {
			if p.Live {
				pids = append(pids, p.Pid)
			}
		}
		return pids
	}
	names, err := readNames("/proc")
	if err != nil {
		return nil
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+name, &st) != nil {
			continue
		}
		switch int(st.Uid) {
		case sessionUser:
			pids = append(pids, pid)
		case 0:
			if ids, ok := proctree.UIDs(pid); ok && slices.Contains(ids[:], sessionUser) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// unlinkedOpenBy adds to seen and total the regular files without links that pid holds open.
// It returns what pid hides from the measure, if anything: its descriptors or mappings that
// cannot be read, a mapping of a deleted file of dev (a process that ended meanwhile holds
// nothing). Each thread that runs may have a descriptor table of its own (clone without
// CLONE_FILES, unshare): the tables of its threads are read, each once, as kcmp tells which
// threads share one; they all share the mappings. The main thread of a process whose main
// thread ended has neither left.
func unlinkedOpenBy(pid int, where sessionFS, seen map[fileID]int64, total *int64) string {
	const notDumpable = "hides its open files (it is not dumpable)"
	taskDir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := readNames(taskDir)
	if err != nil {
		if denied(err) {
			return notDumpable
		}
		return ""
	}
	var read []int // threads whose table was read
	for _, name := range tids {
		tid, err := strconv.Atoi(name)
		if err != nil || !taskRuns(taskDir+name+"/stat") || sharesTable(tid, read) {
			continue
		}
		fdDir := taskDir + name + "/fd/"
		fds, err := readNames(fdDir)
		if err != nil {
			if denied(err) {
				return notDumpable
			}
			continue // the thread ended meanwhile
		}
		if len(read) == 0 {
			switch file, err := where.mappedDeleted(taskDir + name + "/maps"); {
			case denied(err):
				return notDumpable
			case file != "":
				return "maps " + file + ", a deleted file whose size cannot be measured"
			}
		}
		read = append(read, tid)
		for _, fd := range fds {
			var st unix.Stat_t
			if unix.Stat(fdDir+fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 0 {
				continue
			}
			id := fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
			if _, ok := seen[id]; ok {
				continue
			}
			n := max(int64(st.Blocks)*512, int64(st.Size))
			seen[id] = n
			*total += n
		}
	}
	return ""
}

// sessionFS is the session's directory and the filesystem it is on.
type sessionFS struct {
	dir string
	dev uint64
}

// mappedDeleted returns the first file of a maps file (/proc/<pid>/task/<tid>/maps) that is
// mapped though deleted and lies on the session's filesystem (relative to the session's
// directory when it was in it), or "". Mappings of other filesystems take no disk of the
// session's (shared libraries, memfd and /dev/shm, which are memory).
func (w sessionFS) mappedDeleted(maps string) (string, error) {
	data, err := os.ReadFile(maps)
	if err != nil {
		return "", err
	}
	want := fmt.Sprintf("%02x:%02x", unix.Major(w.dev), unix.Minor(w.dev))
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if !strings.HasSuffix(line, " (deleted)") {
			continue
		}
		// start-end perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || f[3] != want || f[4] == "0" {
			continue
		}
		_, path, _ := strings.Cut(line, " /")
		path = "/" + strings.TrimSuffix(path, " (deleted)")
		if rel, err := filepath.Rel(w.dir, path); err == nil && filepath.IsLocal(rel) {
			path = filepath.ToSlash(rel)
		}
		return path, nil
	}
	return "", nil
}

// sharesTable reports whether tid shares its descriptor table with one of the threads of
// read. Without kcmp (a kernel without it, or a seccomp profile that refuses it, as the
// container runtimes' default profiles do without CAP_SYS_PTRACE) every thread's table is read.
func sharesTable(tid int, read []int) bool {
	for _, r := range read {
		same, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(r), uintptr(tid), kcmpFiles, 0, 0, 0)
		if errno == 0 && same == 0 {
			return true
		}
	}
	return false
}

// taskRuns reports whether the thread of a /proc stat file runs (is not a zombie).
func taskRuns(statFile string) bool {
	data, err := os.ReadFile(statFile)
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// readNames lists a directory's names, unsorted.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// denied reports whether err refuses access, rather than telling that the process is gone.
func denied(err error) bool {
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// commOf is the command name of pid, for messages.
func commOf(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(data))
}
