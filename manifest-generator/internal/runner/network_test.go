package runner_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// A session's commands reach no network unless the session asks for egress: a TCP connection
// to a listener on the host's loopback, through bash's /dev/tcp, is refused before it leaves the
// command (the socket itself is), also from a process the command detached; with Egress the
// same command connects.
func TestSessionsHaveNoNetworkUnlessTheyAskForEgress(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash opens TCP connections through /dev/tcp: apt-get install bash")
	}
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf("%s -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected'", bash, port)
	tree := newTree(t, map[string]string{"a.yaml": "a: 1\n"})

	isolated := newSession(t, tree, runner.Options{})
	_, err = isolated.Run(context.Background(), fluxyaml.Command{Command: connect}, ".", nil)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "the command connected: %v", err)
	g.Expect(ce.Stderr).To(ContainSubstring("Permission denied"))
	// Nor through a process that left the command's process group.
	detached := fmt.Sprintf("setsid %s -c 'exec 3<>/dev/tcp/127.0.0.1/%d' 2>&1; true", bash, port)
	g.Expect(run(g, isolated, detached, ".", nil)).To(ContainSubstring("Permission denied"))
	g.Consistently(accepted, 200*time.Millisecond).ShouldNot(Receive(), "a connection reached the listener")

	// A client that does not allow egress refuses the session before it starts.
	_, err = testRunner.Session(tree, runner.Options{Egress: true})
	g.Expect(err).To(MatchError(runner.ErrEgressNotAllowed))
	allowing := *testRunner
	allowing.AllowEgress = true
	open, err := allowing.Session(tree, runner.Options{Egress: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = open.Close() })
	g.Expect(run(g, open, connect, ".", nil)).To(Equal("connected\n"))
	g.Eventually(accepted).Should(Receive())
}
