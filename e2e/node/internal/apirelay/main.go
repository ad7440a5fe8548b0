// Command apirelay gives a pod the API server of a node whose API server listens on the host's
// loopback only: it accepts connections on the pod's loopback and relays each, bytes only (TLS
// goes through end to end), to a unix socket that the node serves on the host and the pod mounts.
package main

import (
	"flag"
	"io"
	"log"
	"net"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:6443", "address to accept connections on")
	socket := flag.String("socket", "/run/apiserver/apiserver.sock", "unix socket of the API server's relay on the host")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", *socket)
			if err != nil {
				log.Print(err)
				return
			}
			defer u.Close()
			relay(c, u)
		}()
	}
}

// relay copies both ways until either side closes.
func relay(a, b net.Conn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(a, b); done <- struct{}{} }()
	go func() { io.Copy(b, a); done <- struct{}{} }()
	<-done
}
