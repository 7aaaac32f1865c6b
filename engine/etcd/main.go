// etcd's own entry point (go.etcd.io/etcd/server/v3/etcdmain), built as a binary of this module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
