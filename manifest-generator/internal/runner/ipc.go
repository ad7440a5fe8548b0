package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// System V IPC objects (shared memory segments, semaphore sets, message queues) live in the
// pod's IPC namespace, not in files: a session's commands may create them, and they outlive the
// processes that did (a shared memory segment stays charged to the runner's memory). After a
// session, once none of its processes is left, the runner removes those its user owns or
// created. Deploy also sets the sysctl kernel.shm_rmid_forced=1, so that a segment goes as
// soon as no process is attached to it.

// ipcKind is a kind of System V IPC object: its /proc/sysvipc file, the column of its ids
// there, and how it is removed.
type ipcKind struct {
	name, idColumn string
	remove         func(id int) error
}

var ipcKinds = []ipcKind{
	{"shm", "shmid", func(id int) error {
		_, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		return err
	}},
	{"sem", "semid", func(id int) error {
		_, _, e := syscall.Syscall(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID)
		return errnoErr(e)
	}},
	{"msg", "msqid", func(id int) error {
		_, _, e := syscall.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)
		return errnoErr(e)
	}},
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// ipcObject is a System V IPC object.
type ipcObject struct {
	kind *ipcKind
	id   int
}

func (o ipcObject) String() string { return o.kind.name + " " + strconv.Itoa(o.id) }

// ipcObjectsOf lists the System V IPC objects of the IPC namespace whose owner or creator is uid.
func ipcObjectsOf(uid int) ([]ipcObject, error) {
	var out []ipcObject
	var errs []error
	for i := range ipcKinds {
		k := &ipcKinds[i]
		ids, err := sysvipcIDs("/proc/sysvipc/"+k.name, k.idColumn, uid)
		if err != nil {
			errs = append(errs, err)
		}
		for _, id := range ids {
			out = append(out, ipcObject{kind: k, id: id})
		}
	}
	return out, errors.Join(errs...)
}

// sysvipcIDs reads a /proc/sysvipc table (a header line naming its columns, then one object a
// line) and returns the ids of the objects whose uid or cuid column is uid. A kernel without
// System V IPC has no such file: no objects.
func sysvipcIDs(file, idColumn string, uid int) ([]int, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return nil, sc.Err()
	}
	col := map[string]int{}
	for i, name := range strings.Fields(sc.Text()) {
		col[name] = i
	}
	idCol, okID := col[idColumn]
	uidCol, okUID := col["uid"]
	cuidCol, okCUID := col["cuid"]
	if !okID || !okUID || !okCUID {
		return nil, fmt.Errorf("%s: no %s, uid and cuid columns in %q", file, idColumn, sc.Text())
	}
	want := strconv.Itoa(uid)
	var ids []int
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) <= max(idCol, uidCol, cuidCol) || f[uidCol] != want && f[cuidCol] != want {
			continue
		}
		if id, err := strconv.Atoi(f[idCol]); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, sc.Err()
}

// removeIPCOf removes the System V IPC objects that uid owns or created, and returns those it
// removed. Removing one (IPC_RMID) takes its owner's or creator's user, or CAP_SYS_ADMIN, which
// the deployed runner does not have: the removal runs on a thread of its own whose effective
// user is uid (asUser). uid's processes must all be gone, or they could make more.
func removeIPCOf(uid int) ([]ipcObject, error) {
	objects, err := ipcObjectsOf(uid)
	if len(objects) == 0 {
		return nil, err
	}
	var removed []ipcObject
	errs := []error{err}
	errs = append(errs, asUser(uid, func() error {
		for _, o := range objects {
			switch err := o.kind.remove(o.id); {
			case err == nil:
				removed = append(removed, o)
			case errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EIDRM):
				// Gone meanwhile.
			default:
				errs = append(errs, fmt.Errorf("removing System V %s: %w", o, err))
			}
		}
		return nil
	}))
	return removed, errors.Join(errs...)
}

// sysSetresuid is setresuid with 32-bit user ids: setresuid32 on 386 and arm.
var sysSetresuid = uintptr(unix.SYS_SETRESUID)

func init() {
	if runtime.GOARCH == "386" || runtime.GOARCH == "arm" {
		sysSetresuid = 208
	}
}

// asUser runs f on an OS thread whose effective user is uid for the while; the runner's other
// threads keep theirs. The raw setresuid changes the calling thread only (the syscall package's
// changes every thread), and needs CAP_SETUID, which the runner has to start sessions. The
// thread keeps the runner's real and saved user, so it may take root back, and with it its
// effective capabilities, which a thread whose effective user is not root loses. The goroutine
// is locked to the thread meanwhile, so nothing else runs with uid, and the runtime starts no
// new thread from a locked one. The thread must not end: the session processes it may have
// started would get their parent-death signal (Pdeathsig) and die with it. So it takes root
// back before it is unlocked, and if it could not (which the saved user rules out), it stays
// locked and parked for good.
func asUser(uid int, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		keep := ^uintptr(0) // -1: unchanged
		if _, _, e := syscall.RawSyscall(sysSetresuid, keep, uintptr(uid), keep); e != 0 {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("taking user %d on a thread: %w", uid, e)
			return
		}
		err := f()
		if _, _, e := syscall.RawSyscall(sysSetresuid, keep, 0, keep); e != 0 {
			done <- errors.Join(err, fmt.Errorf("taking root back on the thread of user %d: %w", uid, e))
			select {}
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}
