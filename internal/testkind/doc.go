// Package testkind is a small configuration kind for the library's own
// tests: per-namespace defaults in flat ConfigMap keys, one version that
// is its own hub. Tests of the library build on it rather than on an
// example's kind, so that an example may change without them.
//
// +k8s:deepcopy-gen=package
package testkind
