// Package differential runs kube-apiserver's own manifest loaders
// (k8s.io/kubernetes v1.37.2, pkg/admission/plugin/.../manifest/loader,
// the functions kube-apiserver installs for each admission plugin) and
// examples/manifests' strata loader on the same directories, and checks
// that they take the same decision and, when they accept, the same
// objects, defaulted alike. It is a module of its own so that neither the
// library nor the example depends on kube-apiserver's loaders.
package differential
