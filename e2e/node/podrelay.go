package node

import (
	"net"
)

// RelayToPods makes a server that listens on the host's loopback (hostAddr, "127.0.0.1:port")
// reachable from the cluster's pods, as the API server is with InClusterAPI: it listens on the
// pods' bridge address with the same port and relays each connection to hostAddr. It returns
// that address, which the host reaches too, and the function that stops the relay.
func (c *Cluster) RelayToPods(hostAddr string) (podAddr string, stop func(), err error) {
	_, port, err := net.SplitHostPort(hostAddr)
	if err != nil {
		return "", nil, err
	}
	gateway, err := bridgeAddress(c.Node.opts.PodCIDR)
	if err != nil {
		return "", nil, err
	}
	podAddr = net.JoinHostPort(gateway.String(), port)
	relay, err := startServiceRelay(podAddr, hostAddr)
	if err != nil {
		return "", nil, err
	}
	return podAddr, relay.stop, nil
}
