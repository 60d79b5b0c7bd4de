// Command etcd is upstream etcd built from the Go module proxy, so tests can
// run envtest against a real etcd without downloading release binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
