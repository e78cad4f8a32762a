#!/usr/bin/env bash
# Generates the example component's deep copies, the registration of its
# defaults, its conversions and its declarative validation, and the deep
# copies of the library tests' kinds (internal/testkind), with Kubernetes'
# code generators (k8s.io/code-generator, pinned in hack/tools/codegen);
# then the example's JSON Schemas (scheme/jsonschema). Run it from the
# module's root with the generators in $BIN (default ./bin): `make
# generate` builds them and runs it, and a test in examples/component runs
# it on a copy to check that the committed files are current.
set -euo pipefail

BIN=${BIN:-$PWD/bin}
HEADER=hack/boilerplate.go.txt

# validations generates the declarative validation of the versions whose
# doc.go asks for it (+k8s:validation-gen): each field's +k8s: tags
# become RegisterValidations, which the version's scheme builder calls.
# The packages its types reach are read-only.
validations() {
  local ro=()
  for p in k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/api/resource \
    k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/types time \
    k8s.io/component-base/config/v1alpha1 k8s.io/component-base/logs/api/v1; do
    ro+=(--readonly-pkg "$p")
  done
  "$BIN/validation-gen" --go-header-file "$HEADER" --output-file zz_generated.validations.go \
    "${ro[@]}" "$@"
}

# kind generates the code of one configuration kind: its internal package
# first, then its versions.
kind() {
  local internal=$1
  shift
  # Deep copies of the internal and versioned types (+k8s:deepcopy-gen).
  "$BIN/deepcopy-gen" --go-header-file "$HEADER" --output-file zz_generated.deepcopy.go \
    "$internal" "$@"
  # RegisterDefaults, calling each version's SetDefaults_ functions
  # (+k8s:defaulter-gen).
  "$BIN/defaulter-gen" --go-header-file "$HEADER" --output-file zz_generated.defaults.go \
    "$@"
  # Conversions between each version and the internal types
  # (+k8s:conversion-gen); component-base's own conversions are reused.
  "$BIN/conversion-gen" --go-header-file "$HEADER" --output-file zz_generated.conversion.go \
    --extra-peer-dirs k8s.io/component-base/config/v1alpha1,k8s.io/apimachinery/pkg/apis/meta/v1,k8s.io/apimachinery/pkg/conversion,k8s.io/apimachinery/pkg/runtime \
    "$@"
}

API=github.com/stratacfg/strata/examples/component/apis/config
kind "$API" "$API/v1alpha1" "$API/v1beta1"
validations "$API/v1alpha1" "$API/v1beta1"

# The declarative validation of examples/controller's JobDefaults, whose
# deep copy is written by hand.
validations github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1

# The library tests' kinds: the versioned one, and a one-version kind that
# needs deep copies only.
TEST=github.com/stratacfg/strata/internal/testkind
kind "$TEST/component" "$TEST/component/v1alpha1" "$TEST/component/v1beta1"
"$BIN/deepcopy-gen" --go-header-file "$HEADER" --output-file zz_generated.deepcopy.go "$TEST"

# The JSON Schema of every version of the examples' kinds, from their Go
# types, doc comments and +k8s: tags (scheme/jsonschema).
go run ./examples/component/cmd/schemagen component examples/component/schemas
go run ./examples/component/cmd/schemagen jobdefaults examples/controller/schemas
