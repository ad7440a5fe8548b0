package sessionpod

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// maxStderr is what is kept of a session process's own log (not its commands' output, which
// travels in the protocol): enough to say why it failed.
const maxStderr = 4 << 10

// conn is the standard input and output of a session pod's session process (an exec), as the
// connection of a runner.Session. Closing it ends the exec and deletes the pod.
type conn struct {
	pods      typedcorev1.PodInterface
	namespace string
	name      string
	deleted   func() // called once the pod is deleted

	stdin  *io.PipeWriter // what the session writes goes to the container's standard input
	stdout *io.PipeReader // what the container prints is read here
	cancel context.CancelFunc
	done   chan struct{} // the exec ended
	stderr tail

	closeOnce sync.Once
}

// exec starts the session process and its stream; it runs until the process exits or conn is
// closed.
func (c *conn) exec(config *rest.Config, restClient rest.Interface, command []string) error {
	exec, err := execExecutor(config, restClient, c.namespace, c.name, command)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c.stdin, c.stdout, c.cancel, c.done = inW, outR, cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: &c.stderr})
		if err == nil {
			err = io.EOF
		}
		_ = outW.CloseWithError(err)
		_ = inR.CloseWithError(err)
	}()
	return nil
}

func (c *conn) Read(p []byte) (int, error)  { return c.stdout.Read(p) }
func (c *conn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close ends the session: the session process's standard input closes (it ends its commands
// and exits), the exec stops and the pod is deleted.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		if c.stdin != nil {
			_ = c.stdin.Close()
			select {
			case <-c.done:
			case <-time.After(time.Second):
			}
			c.cancel()
			_ = c.stdout.Close()
		}
		c.delete()
	})
	return nil
}

// delete deletes the pod, whatever the session's context: nothing of it may stay.
func (c *conn) delete() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := deleteNow(ctx, c.pods, c.name); err == nil && c.deleted != nil {
		c.deleted()
	}
}

// EndReason says why the session's process went away, from its pod's status: out of memory,
// past its deadline, or what it logged.
func (c *conn) EndReason() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The kubelet reports the container's end shortly after the stream breaks.
	var reason string
	for i := 0; i < 20; i++ {
		p, err := c.pods.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			break
		}
		if done, err := started(p); !done && err != nil {
			reason = ended(p)
			break
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	log := strings.TrimSpace(c.stderr.String())
	if strings.Contains(log, "failed to create new OS thread") {
		// The Go runtime of the session process could start no thread: the commands took every
		// process its user may have.
		log = "its commands took every process and thread the session may have (a fork bomb?), and the session process could start none"
	}
	switch {
	case reason != "" && log != "":
		return "the session pod " + c.name + " ended: " + reason + "; its log: " + log
	case reason != "":
		return "the session pod " + c.name + " ended: " + reason
	case log != "":
		return "the session pod " + c.name + " went away; its log: " + log
	}
	return ""
}

// tail keeps the last maxStderr bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > maxStderr {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-maxStderr:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
