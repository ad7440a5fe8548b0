// Command etcd is the upstream etcd server (go.etcd.io/etcd/server/v3/etcdmain) built from the
// module proxy for envtest.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
