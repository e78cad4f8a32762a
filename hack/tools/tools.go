//go:build tools

// Package tools pins the servers that strata's integration tests run. It is a
// module of its own so that k8s.io/kubernetes never enters the library's
// go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
