package testserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshServer accepts public-key authenticated SSH connections and runs git upload-pack and
// receive-pack for exec requests, like the SSH side of a Git host.
type sshServer struct {
	root       string
	addr       string
	hostKey    KeyPair
	knownHosts string
	config     *ssh.ServerConfig
	listener   net.Listener
	logf       func(format string, args ...any)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func startSSH(t testing.TB, root string, hostKey KeyPair, authorized []KeyPair, logf func(string, ...any)) *sshServer {
	t.Helper()
	config := &ssh.ServerConfig{
		// Public keys only: no PasswordCallback or KeyboardInteractiveCallback, so a client
		// without the right key cannot fall back to another method.
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, k := range authorized {
				if bytes.Equal(k.PublicKey.Marshal(), key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("public key not authorized")
		},
	}
	config.AddHostKey(hostKey.Signer)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: SSH listen: %v", err)
	}
	s := &sshServer{
		root:       root,
		addr:       l.Addr().String(),
		hostKey:    hostKey,
		knownHosts: knownhosts.Line([]string{knownhosts.Normalize(l.Addr().String())}, hostKey.PublicKey),
		config:     config,
		listener:   l,
		logf:       logf,
		conns:      map[net.Conn]struct{}{},
	}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *sshServer) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handleConn(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
		}()
	}
}

// close stops accepting, drops the open connections (ending their git processes' input) and
// waits for every handler, so no goroutine or process outlives the test.
func (s *sshServer) close() {
	s.mu.Lock()
	s.closed = true
	_ = s.listener.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *sshServer) handleConn(conn net.Conn) {
	defer conn.Close()
	sc, chans, reqs, err := ssh.NewServerConn(conn, s.config)
	if err != nil {
		return // failed handshake or authentication: the client sees why
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handleSession(ch, chReqs)
		}()
	}
}

// handleSession serves one session: env requests for GIT_PROTOCOL (so clients can ask for
// protocol v2), then a single exec request; shells, terminals and other variables are refused.
func (s *sshServer) handleSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var env []string
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if err := ssh.Unmarshal(req.Payload, &kv); err != nil || kv.Name != "GIT_PROTOCOL" {
				_ = req.Reply(false, nil)
				continue
			}
			env = append(env, "GIT_PROTOCOL="+kv.Value)
			_ = req.Reply(true, nil)
		case "exec":
			var cmd struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &cmd); err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			status := s.exec(ch, cmd.Command, env)
			_ = ch.CloseWrite()
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			return
		default:
			_ = req.Reply(false, nil)
		}
	}
}

// exec runs the Git service named by command against a repository under the root, with the
// channel as its standard streams, and returns its exit status. A refused command gets a
// message on standard error and status 128, as git itself exits on fatal errors.
func (s *sshServer) exec(ch ssh.Channel, command string, env []string) uint32 {
	service, dir, err := s.parseCommand(command)
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	cmd := exec.Command("git", service, dir)
	cmd.Env = append(GitEnv(), env...)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	// A pipe we copy into ourselves rather than cmd.Stdin = ch: with an io.Reader as Stdin,
	// Wait would also wait for the client to close its side, which clients do only after the
	// exit status arrives.
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: starting git %s: %v\n", service, err)
		return 128
	}
	go func() {
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	if err := cmd.Wait(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
			return uint32(exitErr.ExitCode())
		}
		s.logf("ssh: git %s %s: %v", service, dir, err)
		return 128
	}
	return 0
}

// parseCommand accepts `git-upload-pack '<path>'` and `git-receive-pack '<path>'` (also with
// "git upload-pack") and returns git's subcommand and the repository's directory, refusing
// any path that leaves the root.
func (s *sshServer) parseCommand(command string) (service, dir string, err error) {
	prog, arg, ok := strings.Cut(command, " ")
	if prog == "git" {
		var sub string
		sub, arg, ok = strings.Cut(arg, " ")
		prog = "git-" + sub
	}
	switch prog {
	case "git-upload-pack", "git-receive-pack":
	default:
		return "", "", fmt.Errorf("only git-upload-pack and git-receive-pack are served, not %q", command)
	}
	if !ok {
		return "", "", fmt.Errorf("%s: no repository path", prog)
	}
	p, err := shellUnquote(strings.TrimSpace(arg))
	if err != nil {
		return "", "", err
	}
	dir, err = s.resolve(p)
	if err != nil {
		return "", "", err
	}
	return strings.TrimPrefix(prog, "git-"), dir, nil
}

// resolve maps a repository path from the URL ("/app.git" or "app.git") to its directory under
// the root. Any ".." element is refused outright instead of being cleaned away, and symbolic
// links must not lead out of the root either.
func (s *sshServer) resolve(p string) (string, error) {
	rel := strings.TrimLeft(p, "/")
	if rel == "" || strings.HasPrefix(rel, "~") {
		return "", fmt.Errorf("%q: not a repository path under the server root", p)
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == ".." {
			return "", fmt.Errorf("%q: path escapes the server root", p)
		}
	}
	root, err := filepath.EvalSymlinks(s.root)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%q does not appear to be a git repository", p)
		}
		return "", err
	}
	if r, err := filepath.Rel(root, dir); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q: path escapes the server root", p)
	}
	return dir, nil
}

// shellUnquote undoes the POSIX shell quoting Git clients put around the path: single-quoted
// runs, and backslash escapes between them (git's sq_quote closes the quotes around an
// embedded quote or "!" and escapes it with a backslash). Plain unquoted words pass through.
func shellUnquote(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("unterminated quote in %q", s)
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case '\\':
			if i+1 == len(s) {
				return "", fmt.Errorf("trailing backslash in %q", s)
			}
			i++
			b.WriteByte(s[i])
		case ' ', '\t':
			return "", fmt.Errorf("more than one argument in %q", s)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
