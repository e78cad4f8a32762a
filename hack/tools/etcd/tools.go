//go:build tools

// Package etcd pins the etcd server that strata's integration tests run
// (go.etcd.io/etcd/server/v3 v3.6.7), and the etcdctl and etcdutl of the
// same release, which save and restore its snapshots. It is a module of
// its own so that k8s.io/kubernetes v1.37.2's requirements (etcd's v3.7
// client modules) never decide, by minimal version selection, which etcd
// is built.
package etcd

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
