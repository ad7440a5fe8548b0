package runner

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// sessionArg is the subcommand of a session that runs in a pod of its own (internal/sessionpod):
// the pod is the session, the controller speaks the session protocol on its standard input and
// output (an exec in the pod), and the container runtime, not a pool of users, keeps it from every other
// session: its processes, System V IPC, files and memory go with the pod.
const sessionArg = "session"

// sessionMain serves one session on standard input and output, in a fresh directory under
// --workdir, then exits. The session's limits apply as in the runner; RLIMIT_NPROC too, as the
// pod runs as a user no other session has.
func sessionMain(args []string, log *slog.Logger) int {
	fs := flag.NewFlagSet("runner session", flag.ContinueOnError)
	workdir := fs.String("workdir", "/work", "The directory of the session's tree, HOME and TMPDIR (a volume of the pod).")
	limits := DefaultLimits
	limits.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := limits.validate(); err != nil {
		log.Error("session", "error", err)
		return 2
	}
	reserveThreads(reservedThreads)
	dir, err := os.MkdirTemp(*workdir, "session-")
	if err != nil {
		log.Error("session", "error", err)
		return 1
	}
	if err := runJob(stdio{bufio.NewReaderSize(os.Stdin, 64<<10), os.Stdout}, dir, jobConfig{Limits: limits, PerUser: true, Pod: true}); err != nil {
		log.Error("session", "error", fmt.Sprint(err))
		return 1
	}
	return 0
}

// reservedThreads are the OS threads a session process makes at its start for later.
const reservedThreads = 16

// reserveThreads makes the Go runtime start n OS threads, which it keeps idle for when a
// goroutine blocks: the session's commands run as the session process's user and may take
// every process and thread that user may have (a fork bomb), after which the runtime could not
// start the thread it needs to go on, and would die with the session.
func reserveThreads(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			time.Sleep(5 * time.Millisecond)
			runtime.UnlockOSThread()
		})
	}
	wg.Wait()
}

// stdio is the session's connection: the exec's standard input and output.
type stdio struct {
	io.Reader
	io.Writer
}

// pauseArg is the subcommand of a session pod's own process: it waits, doing nothing, until the
// pod is deleted, while the session process runs beside it (an exec: its output then travels
// only to the controller, never into the node's container logs).
const pauseArg = "pause"

// pause waits for SIGTERM or SIGINT.
func pause() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
	return 0
}

// PauseArgs are the arguments of the controller's binary that keep a session pod running.
func PauseArgs() []string { return []string{"runner", pauseArg} }

// SessionArgs are the arguments of the controller's binary that serve one session in a pod:
// its files in workdir, under l.
func SessionArgs(workdir string, l Limits) []string {
	return append([]string{"runner", sessionArg, "--workdir", workdir}, l.args()...)
}
