package harness

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
)

// Proxy forwards a loopback port to a server, byte for byte, and can take the server away from
// the clients that reach it through the proxy: Down closes the listener and every connection,
// so a client gets "connection refused" as when the server is stopped; Up listens again on the
// same port. The server itself keeps running for everyone else, so one scenario's outage does
// not touch the others sharing the server.
type Proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// StartProxy forwards a free loopback port to target ("host:port").
func StartProxy(target string) (*Proxy, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), conns: map[net.Conn]struct{}{}}
	if err := p.Up(); err != nil {
		return nil, err
	}
	return p, nil
}

// StartProxyFor is StartProxy for the host of a server's URL ("http://127.0.0.1:41234").
func StartProxyFor(serverURL string) (*Proxy, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	return StartProxy(u.Host)
}

// Addr is the proxy's "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.addr }

// URL returns rawURL (a URL of the server) with its host replaced by the proxy's: the same
// resource, reached through the proxy.
func (p *Proxy) URL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(fmt.Sprintf("harness.Proxy: %v", err))
	}
	u.Host = p.addr
	return u.String()
}

// Up listens on the proxy's port, if it does not already.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("proxy to %s: %w", p.target, err)
	}
	p.ln = ln
	go p.serve(ln)
	return nil
}

// Down closes the listener and every open connection.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Close is Down, for t.Cleanup.
func (p *Proxy) Close() { p.Down() }

func (p *Proxy) serve(ln net.Listener) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return // closed by Down
		}
		go p.forward(client)
	}
}

// forward copies both ways between the client and a new connection to the target until either
// side closes.
func (p *Proxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close, so that the other direction can still finish (an HTTP response after
		// the request body).
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
	p.untrack(client, server)
}

// track registers the connections for Down; it closes them and returns false when the proxy
// went down since the client connected.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}
