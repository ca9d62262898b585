// Command etcd runs etcd's own server entry point, so the e2e bed builds etcd from its Go module
// at the version this module pins instead of relying on a distribution package.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
