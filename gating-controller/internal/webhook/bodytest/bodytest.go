// Package bodytest sends the receivers' tests bodies that do not end, or lie about their length,
// and counts what the server read of each connection: what a caller made the server take,
// whatever the kernel buffered on the way (Argo Workflows' CVE-2026-42294, a body read whole
// before authentication).
package bodytest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// ReadMargin is what the server may read of a connection beyond the body's cap: the request's
// headers, what its 4 KiB bufio.Reader reads ahead, and the chunks' framing.
const ReadMargin = 16 << 10

// MaxStream bounds the "endless" body a test sends, only so that a server that does read a body
// whole cannot exhaust the test machine's memory (64 times the Flux receiver's cap).
const MaxStream = 64 << 20

// CountingListener counts, per connection, the bytes the server read from it: what a caller made
// the server take, whatever the kernel buffered on the way.
type CountingListener struct {
	net.Listener
	mu     sync.Mutex
	byPeer map[string]*atomic.Int64
}

// Listen is a loopback listener that counts what the server reads of each connection.
func Listen(t *testing.T) *CountingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return &CountingListener{Listener: ln, byPeer: map[string]*atomic.Int64{}}
}

func (l *CountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := &atomic.Int64{}
	l.mu.Lock()
	l.byPeer[c.RemoteAddr().String()] = n
	l.mu.Unlock()
	return &countingConn{Conn: c, n: n}, nil
}

// ReadFrom is how many bytes the server read from the connection of the client at addr.
func (l *CountingListener) ReadFrom(addr string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.byPeer[addr]; n != nil {
		return n.Load()
	}
	return -1
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// CloseWrite keeps what net/http does before it closes a connection whose body it did not read
// (a FIN, then a pause, so that the answer is not lost to a reset).
func (c *countingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// endless is a body that does not end (until MaxStream), and counts what was taken of it.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= MaxStream {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), MaxStream-e.n)]
	for i := range p {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

// Streamed is what a Streamed request got: the answer, the bytes of the body the client wrote
// (to the kernel) and the bytes the server read of the connection.
type Streamed struct {
	Code       int
	Msg        string
	Sent, Read int64
}

// Send posts an endless body to path on a connection of its own, as a raw HTTP/1.1 client
// does: chunked when contentLength is negative, else under a Content-Length of contentLength
// (which the stream does not honour when it is larger than MaxStream). It reads the answer while
// the body is still being written, waits until the server is done with the connection, and
// returns what the server read of it.
func Send(t *testing.T, ln *CountingListener, path string, headers map[string]string, contentLength int64) Streamed {
	t.Helper()
	g := NewWithT(t)
	conn, err := net.Dial("tcp", ln.Addr().String())
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	g.Expect(conn.SetDeadline(time.Now().Add(60 * time.Second))).To(Succeed())
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n", path, ln.Addr())
	for k, v := range headers {
		head += k + ": " + v + "\r\n"
	}
	if contentLength < 0 {
		head += "Transfer-Encoding: chunked\r\n"
	} else {
		head += fmt.Sprintf("Content-Length: %d\r\n", contentLength)
	}
	_, err = io.WriteString(conn, head+"\r\n")
	g.Expect(err).NotTo(HaveOccurred())

	body := &endless{}
	written := make(chan struct{})
	go func() {
		defer close(written)
		var w io.Writer = conn
		if contentLength < 0 {
			w = httputil.NewChunkedWriter(conn)
		}
		// Until the server closes the connection, or the stream ends; then a server still reading
		// gets the end of the stream instead of waiting for more.
		if _, err := io.Copy(w, body); err == nil {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
	}()

	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	var out struct{ Message string }
	g.Expect(json.Unmarshal(raw, &out)).To(Succeed(), string(raw))
	// What the server reads after its answer, it reads before it closes its side.
	_, _ = io.Copy(io.Discard, br)
	read := ln.ReadFrom(conn.LocalAddr().String())
	_ = conn.Close()
	<-written
	return Streamed{Code: resp.StatusCode, Msg: out.Message, Sent: body.n, Read: read}
}
