// Package tools holds nothing but the build of the real programs that
// strata's tests run: kube-apiserver (k8s.io/kubernetes v1.37.2), a driver
// around kubelet's AtomicWriter (cmd/atomicwriter), and, in the etcd
// submodule, etcd. The repository's Makefile builds them into bin/.
package tools
