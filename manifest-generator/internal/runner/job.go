package runner

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/artifact"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

// job serves one session, in a process of its own started by the daemon (or in a pod of its
// own: `runner session`): conn is the session's connection and dir a fresh directory of the job
// (the tree goes to dir/tree, the commands' HOME is dir/home). The process is a child
// subreaper, so that no process a command starts survives it: when a command ends, and when
// the session ends, every descendant is killed.
type job struct {
	dir     string
	tree    string
	enc     *gob.Encoder
	runner  *command
	limits  Limits
	perUser bool // RLIMIT_NPROC is the session's
	pod     bool // the session is a pod's: its memory and disk are the pod's
	track   bool
	initial map[string]entry
}

// runJob serves the session on conn until the controller closes it, then kills what is left
// and deletes dir.
func runJob(conn io.ReadWriter, dir string, cfg jobConfig) error {
	if err := proctree.BecomeSubreaper(); err != nil {
		return fmt.Errorf("becoming a subreaper: %w", err)
	}
	// Not dumpable: the commands run as this process's user, and could otherwise attach to it
	// (ptrace, /proc/<pid>/mem, pidfd_getfd) and answer the controller in its place.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making the session process undumpable: %w", err)
	}
	if err := cfg.Limits.apply(cfg.PerUser); err != nil {
		return err
	}
	defer func() {
		proctree.KillDescendants(os.Getpid())
		_ = RemoveTree(dir)
	}()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	j := &job{dir: real, tree: filepath.Join(real, "tree"), enc: gob.NewEncoder(conn), limits: cfg.Limits, perUser: cfg.PerUser, pod: cfg.Pod}
	for _, d := range []string{j.tree, filepath.Join(real, "home"), filepath.Join(real, "tmp")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	requests := readRequests(ctx, cancel, conn)

	req, ok := <-requests
	if !ok {
		return nil
	}
	if req.Op != opOpen || req.Open == nil {
		return j.reply(response{Err: "the session must start with " + opOpen})
	}
	if err := j.open(req.Open); err != nil {
		return err
	}
	if err := j.receiveTree(requests); err != nil {
		_ = j.reply(response{Err: err.Error()})
		return err
	}
	if err := j.reply(response{}); err != nil {
		return err
	}
	for req := range requests {
		var resp response
		switch req.Op {
		case opRun:
			resp = j.run(ctx, req.Run)
		case opWrite:
			resp = j.write(req.Write)
		case opChanges:
			resp = j.changes()
		default:
			resp = response{Err: fmt.Sprintf("unknown request %q", req.Op)}
		}
		if err := j.reply(resp); err != nil {
			return err
		}
	}
	return nil
}

// readRequests reads the requests of conn ahead, in a goroutine, so that the end of the
// connection (the controller gave up or went away) interrupts a running command at once: it
// cancels ctx then, and closes the channel.
func readRequests(ctx context.Context, cancel context.CancelFunc, conn io.Reader) <-chan request {
	requests := make(chan request)
	go func() {
		defer cancel()
		defer close(requests)
		dec := gob.NewDecoder(bufio.NewReader(conn))
		for {
			var req request
			if err := dec.Decode(&req); err != nil {
				return
			}
			select {
			case requests <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	return requests
}

// open sets the session up as the controller asked (o): no network without egress, and the
// runner of its commands. It answers the request.
func (j *job) open(o *openRequest) error {
	if !o.Egress {
		if err := denyNetwork(); err != nil {
			_ = j.reply(response{Err: err.Error()})
			return err
		}
	}
	j.track = o.Track
	// Scratch files of the tools go to the job's own TMPDIR, deleted with it, unless the user set one.
	env := map[string]string{"TMPDIR": filepath.Join(j.dir, "tmp")}
	for k, v := range o.Env {
		env[k] = v
	}
	j.runner = &command{Path: o.Path, Home: filepath.Join(j.dir, "home"), Env: env,
		DefaultTimeout: o.DefaultTimeout, MaxOutput: o.MaxOutput, KillDescendants: true}
	return j.reply(response{})
}

func (j *job) reply(resp response) error { return j.enc.Encode(&resp) }

// receiveTree extracts the opTree chunks into the tree, with the artifact extraction's checks
// (no path leaves the tree, no device files, size and file limits).
func (j *job) receiveTree(requests <-chan request) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := artifact.ExtractTar(pr, j.tree, artifact.Limits{})
		_ = pr.CloseWithError(err) // unblocks the writer when the extraction stopped early
		done <- err
	}()
	for {
		req, ok := <-requests
		if !ok {
			_ = pw.CloseWithError(errors.New("the session ended during the upload"))
			<-done
			return errors.New("the session ended during the upload")
		}
		if req.Op != opTree {
			_ = pw.CloseWithError(fmt.Errorf("unexpected request %q during the upload", req.Op))
			<-done
			return fmt.Errorf("unexpected request %q during the upload", req.Op)
		}
		if len(req.Chunk) == 0 {
			_ = pw.Close()
			break
		}
		if _, err := pw.Write(req.Chunk); err != nil {
			// The extraction failed; drain the rest of the upload so the reply is read.
			for req := range requests {
				if req.Op != opTree || len(req.Chunk) == 0 {
					break
				}
			}
			return fmt.Errorf("extracting the tree: %w", <-done)
		}
	}
	if err := <-done; err != nil {
		return fmt.Errorf("extracting the tree: %w", err)
	}
	if j.track {
		snap, err := snapshot(j.tree)
		if err != nil {
			return err
		}
		j.initial = snap
	}
	return nil
}

func (j *job) run(ctx context.Context, req *runRequest) response {
	if req == nil {
		return response{Err: "no command"}
	}
	dir, err := j.path(req.Dir)
	if err != nil {
		return response{Err: err.Error()}
	}
	cmd := fluxyaml.Command{Command: req.Command}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = j.runner.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = fluxyaml.DefaultTimeout
	}
	if timeout > j.limits.MaxTimeout {
		timeout = j.limits.MaxTimeout
	}
	cmd.Timeout = &metav1.Duration{Duration: timeout}
	// The session's files are measured while the command runs; passing the limit kills it.
	cmdCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go watchDisk(cmdCtx, j.dir, j.limits, stop)
	var pod *podWatch
	if j.pod {
		pod = watchPod(cmdCtx, j.dir)
	}
	stdout, err := j.runner.Run(cmdCtx, cmd, dir, req.Env)
	overDisk := checkDisk(j.dir, j.limits)
	var dl *DiskLimitError
	if errors.As(context.Cause(cmdCtx), &dl) {
		overDisk = dl
	}
	if j.pod {
		overDisk = inPod(overDisk)
	}
	if err == nil && overDisk == nil {
		return response{Run: &runResponse{Stdout: stdout}}
	}
	if err == nil {
		err = overDisk
	}
	out := &runResponse{Failed: true, ExitCode: -1, Error: err.Error()}
	var ce *fluxyaml.CommandError
	if errors.As(err, &ce) {
		out.Stderr, out.ExitCode, out.TimedOut, out.Timeout = ce.Stderr, ce.ExitCode, ce.TimedOut, ce.Timeout
		if ce.Err != nil {
			out.Error = ce.Err.Error()
		}
		if forkFailed(ce.Stderr) && j.perUser {
			out.Error += fmt.Sprintf(" (a session may run %d processes and threads, --%s)", j.limits.MaxProcesses, flagMaxProcesses)
		}
		if errors.Is(err, fluxyaml.ErrOutputTooLarge) {
			out.OutputLimit = j.runner.MaxOutput
			if out.OutputLimit <= 0 {
				out.OutputLimit = fluxyaml.DefaultMaxOutput
			}
		}
	}
	if overDisk != nil {
		out.Error = overDisk.Error()
	}
	if pod != nil {
		pod.explain(out)
	}
	return response{Run: out}
}

func (j *job) write(req *writeRequest) response {
	if req == nil {
		return response{Err: "nothing to write"}
	}
	root, err := os.OpenRoot(j.tree)
	if err != nil {
		return response{Err: err.Error()}
	}
	defer root.Close()
	name := filepath.FromSlash(req.Path)
	if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return response{Err: err.Error()}
	}
	if err := root.WriteFile(name, req.Data, fs.FileMode(req.Mode).Perm()); err != nil {
		return response{Err: err.Error()}
	}
	return response{}
}

func (j *job) changes() response {
	if j.initial == nil {
		return response{Err: "the session does not track changes"}
	}
	cs, err := changes(j.tree, j.initial, j.limits)
	var over *ChangeLimitError
	if errors.As(err, &over) {
		return response{Err: err.Error(), OverLimit: over}
	}
	if err != nil {
		return response{Err: err.Error()}
	}
	return response{Changes: cs}
}

// path is the directory rel (slash-separated) of the tree; it must exist inside it.
func (j *job) path(rel string) (string, error) {
	p := filepath.FromSlash(rel)
	if p != "." && !filepath.IsLocal(p) {
		return "", fmt.Errorf("directory %q is outside the tree", rel)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(j.tree, p))
	if err != nil {
		return "", fmt.Errorf("directory %q: %w", rel, unwrapPath(err))
	}
	if inner, err := filepath.Rel(j.tree, dir); err != nil || !(inner == "." || filepath.IsLocal(inner)) {
		return "", fmt.Errorf("directory %q resolves outside the tree", rel)
	}
	return dir, nil
}

// unwrapPath drops the runner's own paths from an error that names one.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// forkFailed reports whether a command's error output says it could not start a process, as
// the shells and Go programs say it when RLIMIT_NPROC is reached.
func forkFailed(stderr string) bool {
	return strings.Contains(stderr, "Cannot fork") || strings.Contains(stderr, "fork: Resource temporarily unavailable") ||
		strings.Contains(stderr, "fork/exec") && strings.Contains(stderr, "resource temporarily unavailable")
}
