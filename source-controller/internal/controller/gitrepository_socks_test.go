package controller

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// An ssh URL goes through a SOCKS5 proxy of spec.proxySecretRef, with its credentials.
func TestGitRepositorySSHThroughSOCKS5(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := server.NewRepo(t, "socks")
	sha := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	socks := newSOCKS5(t, "u", "p")
	createSecret(t, ns, "ssh-auth", map[string][]byte{"identity": server.Identity().PrivateKeyPEM, "known_hosts": server.KnownHosts()})
	createSecret(t, ns, "socks", map[string][]byte{"address": []byte("socks5://" + socks.addr), "username": []byte("u"), "password": []byte("p")})
	key := createRepo(t, ns, "socks", sourcev1.GitRepositorySpec{
		URL: repo.SSHURL(), SecretRef: &meta.LocalObjectReference{Name: "ssh-auth"}, ProxySecretRef: &meta.LocalObjectReference{Name: "socks"},
	})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + sha))
	g.Expect(socks.connects.Load()).To(BeNumerically(">=", 1)) // the clone: a first fetch lists nothing before
	g.Expect(socks.target.Load()).To(Equal(server.SSHAddr()))
}

// socks5 is a SOCKS5 proxy (RFC 1928) with username/password authentication (RFC 1929) that
// serves CONNECT only: enough to carry an SSH connection and see it pass.
type socks5 struct {
	addr     string
	connects atomic.Int64
	target   atomic.Value
}

func newSOCKS5(t *testing.T, user, password string) *socks5 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &socks5{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				upstream, err := s.handshake(c, user, password)
				if err != nil {
					return
				}
				defer upstream.Close()
				go func() { _, _ = io.Copy(upstream, c) }()
				_, _ = io.Copy(c, upstream)
			}()
		}
	}()
	return s
}

// handshake negotiates username/password authentication and a CONNECT to an IPv4 or domain
// address, and dials it.
func (s *socks5) handshake(c net.Conn, user, password string) (net.Conn, error) {
	read := func(n int) ([]byte, error) {
		b := make([]byte, n)
		_, err := io.ReadFull(c, b)
		return b, err
	}
	head, err := read(2) // version, number of methods
	if err != nil || head[0] != 5 {
		return nil, errors.New("not SOCKS5")
	}
	if _, err := read(int(head[1])); err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{5, 2}); err != nil { // username/password required
		return nil, err
	}
	v, err := read(2)
	if err != nil {
		return nil, err
	}
	u, err := read(int(v[1]))
	if err != nil {
		return nil, err
	}
	l, err := read(1)
	if err != nil {
		return nil, err
	}
	p, err := read(int(l[0]))
	if err != nil {
		return nil, err
	}
	if string(u) != user || string(p) != password {
		_, _ = c.Write([]byte{1, 1})
		return nil, errors.New("wrong credentials")
	}
	if _, err := c.Write([]byte{1, 0}); err != nil {
		return nil, err
	}
	req, err := read(4) // version, command, reserved, address type
	if err != nil || req[1] != 1 {
		return nil, errors.New("not a CONNECT")
	}
	var host string
	switch req[3] {
	case 1:
		ip, err := read(4)
		if err != nil {
			return nil, err
		}
		host = net.IP(ip).String()
	case 3:
		n, err := read(1)
		if err != nil {
			return nil, err
		}
		name, err := read(int(n[0]))
		if err != nil {
			return nil, err
		}
		host = string(name)
	default:
		return nil, errors.New("unsupported address type")
	}
	port, err := read(2)
	if err != nil {
		return nil, err
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port))))
	upstream, err := net.Dial("tcp", target)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return nil, err
	}
	s.connects.Add(1)
	s.target.Store(target)
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		upstream.Close()
		return nil, err
	}
	return upstream, nil
}
