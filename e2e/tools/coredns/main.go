// Command coredns is CoreDNS with only the plugins the node's Corefile (e2e/node) uses: errors,
// ready, kubernetes and cache. Without the other plugins (and their cloud SDKs) it builds in a
// fraction of the full binary's time. The version is the github.com/coredns/coredns of go.mod
// beside this file, which `make node-tools` checks against COREDNS_VERSION.
package main

import (
	"log"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives are the plugins in CoreDNS's execution order (that of its plugin.cfg).
var directives = []string{
	"ready",
	"errors",
	"cache",
	"kubernetes",
}

func main() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		log.Fatal(err)
	}
	coremain.Run()
}
