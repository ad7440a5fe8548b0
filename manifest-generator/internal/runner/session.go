package runner

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
)

// chunkSize is the size of the tree chunks sent to the runner.
const chunkSize = 256 << 10

// Session runs commands in the runner, in a private copy of a tree of the controller. It is a
// fluxyaml.Executor. Its methods must not be called concurrently (commands run one at a time,
// so that the runner can kill everything a command left behind). Once a call was interrupted
// by its context, or the runner went away, every later call fails.
type Session struct {
	client Client
	root   string // the local tree, absolute and free of links
	opts   Options

	mu     sync.Mutex
	conn   io.ReadWriteCloser
	enc    *gob.Encoder
	dec    *gob.Decoder
	in     *budgetReader // under dec: bounds each response
	broken error
}

var _ fluxyaml.Executor = (*Session)(nil)

// Run runs cmd in dir, a directory inside the session's tree (as fluxyaml.TargetDir gives it),
// with env added to the session's variables.
func (s *Session) Run(ctx context.Context, cmd fluxyaml.Command, dir string, env map[string]string) ([]byte, error) {
	cmdErr := &fluxyaml.CommandError{Command: cmd.Command, ExitCode: -1, Timeout: s.timeout(cmd)}
	rel, err := s.rel(dir)
	if err != nil {
		cmdErr.Err = err
		return nil, cmdErr
	}
	req := &runRequest{Command: cmd.Command, Dir: rel, Env: env}
	if cmd.Timeout != nil {
		req.Timeout = cmd.Timeout.Duration
	}
	resp, err := s.call(ctx, request{Op: opRun, Run: req})
	if err != nil {
		cmdErr.Err = err
		return nil, cmdErr
	}
	out := resp.Run
	if out == nil {
		cmdErr.Err = errors.New("the runner sent no result")
		return nil, cmdErr
	}
	if !out.Failed {
		return out.Stdout, nil
	}
	cmdErr.Stderr, cmdErr.ExitCode, cmdErr.TimedOut, cmdErr.Timeout = out.Stderr, out.ExitCode, out.TimedOut, out.Timeout
	switch {
	case out.OutputLimit > 0:
		cmdErr.Err = fluxyaml.NewOutputTooLargeError(out.OutputLimit)
	case out.TimedOut:
		cmdErr.Err = context.DeadlineExceeded
	default:
		cmdErr.Err = errors.New(out.Error)
	}
	return nil, cmdErr
}

// WriteFile writes a file of the session's tree; name is relative to the tree's root.
func (s *Session) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	_, err := s.call(ctx, request{Op: opWrite, Write: &writeRequest{Path: filepath.ToSlash(name), Data: data, Mode: uint32(perm.Perm())}})
	return err
}

// Changes lists what differs in the session's tree from the tree uploaded (Options.Track must
// be set): what the commands (and WriteFile) changed. More changes than the runner sends back
// are a *ChangeLimitError.
func (s *Session) Changes(ctx context.Context) ([]Change, error) {
	resp, err := s.call(ctx, request{Op: opChanges})
	if err != nil {
		return nil, err
	}
	return resp.Changes, nil
}

// Close ends the session: the runner kills what is left of its commands and deletes its tree.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		s.broken = errors.New("the runner session is closed")
	}
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}

func (s *Session) timeout(cmd fluxyaml.Command) time.Duration {
	switch {
	case cmd.Timeout != nil && cmd.Timeout.Duration > 0:
		return cmd.Timeout.Duration
	case s.opts.DefaultTimeout > 0:
		return s.opts.DefaultTimeout
	}
	return fluxyaml.DefaultTimeout
}

// rel turns a directory of the local tree into the slash path the runner knows.
func (s *Session) rel(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.root, dir)
	}
	rel, err := filepath.Rel(s.root, dir)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return "", fmt.Errorf("directory %s is outside the tree of the session", dir)
	}
	return filepath.ToSlash(rel), nil
}

// call sends req and reads its response, connecting (and uploading the tree) first when the
// session is new. A call interrupted by ctx breaks the session.
func (s *Session) call(ctx context.Context, req request) (*response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return nil, s.broken
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.conn == nil {
		if err := s.connect(ctx); err != nil {
			s.fail(err)
			return nil, err
		}
	}
	resp, err := s.roundTrip(ctx, func() error { return s.enc.Encode(&req) })
	if err != nil {
		s.fail(err)
		return nil, err
	}
	if resp.OverLimit != nil {
		return nil, resp.OverLimit
	}
	if resp.Err != "" {
		return nil, errors.New("runner: " + resp.Err)
	}
	return resp, nil
}

// connect reaches the session's process (the runner's socket, or a pod of its own), opens the
// session and uploads the tree.
func (s *Session) connect(ctx context.Context) error {
	began := time.Now()
	conn, err := s.client.dial(ctx, s.opts)
	if err != nil {
		return err
	}
	s.attach(conn)
	open := &openRequest{Path: s.opts.Path, Env: s.opts.Env, DefaultTimeout: s.opts.DefaultTimeout, MaxOutput: s.opts.MaxOutput, Track: s.opts.Track, Egress: s.opts.Egress}
	if _, err := s.roundTrip(ctx, func() error { return s.enc.Encode(&request{Op: opOpen, Open: open}) }); err != nil {
		return err
	}
	// What a session costs to start (a pod's scheduling and start, or the runner's process),
	// before its tree, in the controller's log.
	logr.FromContextOrDiscard(ctx).Info("session started", "owner", s.opts.Owner.Namespace+"/"+s.opts.Owner.Name,
		"inPod", s.client.Dialer != nil, "startSeconds", time.Since(began).Seconds())
	resp, err := s.roundTrip(ctx, func() error {
		w := bufio.NewWriterSize(chunkWriter{s.enc}, chunkSize)
		if err := writeTree(w, s.root); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return s.enc.Encode(&request{Op: opTree})
	})
	if err != nil {
		return err
	}
	if resp.Err != "" {
		return errors.New("runner: " + resp.Err)
	}
	return nil
}

// roundTrip sends with send and reads one response; ctx ending unblocks both by closing the
// connection (the session is broken then anyway).
func (s *Session) roundTrip(ctx context.Context, send func() error) (*response, error) {
	conn := s.conn
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	var resp response
	err := send()
	if err == nil {
		s.in.left = s.maxResponse()
		err = s.dec.Decode(&resp)
		if s.in.left < 0 {
			err = fmt.Errorf("its response is over %d bytes", s.maxResponse())
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	if err != nil {
		return nil, s.client.wentAway(s.conn, err)
	}
	return &resp, nil
}

// attach makes conn the session's connection.
func (s *Session) attach(conn io.ReadWriteCloser) {
	s.in = &budgetReader{r: bufio.NewReader(conn)}
	s.conn, s.enc, s.dec = conn, gob.NewEncoder(conn), gob.NewDecoder(s.in)
}

// maxResponse bounds what one response of the runner may take in the controller's memory: the
// largest output of a command, and the changed files of an update, with room to spare.
func (s *Session) maxResponse() int64 {
	out := s.opts.MaxOutput
	if out <= 0 {
		out = fluxyaml.DefaultMaxOutput
	}
	return out + maxChangesResponse
}

// maxChangesResponse is the room of a response beyond a command's output: the runner's changed
// files (--max-changed-size, 32 MiB by default) and the encoding.
const maxChangesResponse = 128 << 20

// budgetReader reads from r until left is spent: the decoder then fails, before a response
// the runner claims to be huge is read into memory.
type budgetReader struct {
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.left = -1
		return 0, errors.New("response too large")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// fail breaks the session and closes its connection: the runner then stops what runs.
func (s *Session) fail(err error) {
	s.broken = err
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}

// chunkWriter sends what is written to it as opTree chunks.
type chunkWriter struct{ enc *gob.Encoder }

func (w chunkWriter) Write(p []byte) (int, error) {
	if err := w.enc.Encode(&request{Op: opTree, Chunk: p}); err != nil {
		return 0, err
	}
	return len(p), nil
}
