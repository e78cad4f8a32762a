//go:build tools

// Package codegen pins the Kubernetes code generators that `make generate`
// runs over the example component's API types. It is a module of its own,
// so that the generators' dependencies never change what the servers in
// hack/tools are built from.
package codegen

import (
	_ "k8s.io/code-generator/cmd/conversion-gen"
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/code-generator/cmd/defaulter-gen"
	_ "k8s.io/code-generator/cmd/validation-gen"
)
