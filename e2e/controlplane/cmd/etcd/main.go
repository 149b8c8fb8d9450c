// Command etcd is etcd's own server entry point, built from go.etcd.io/etcd/server/v3
// (the etcd release's main package lives in a module we do not need).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
