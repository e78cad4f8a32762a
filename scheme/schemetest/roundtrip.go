// Package schemetest has test helpers for configuration kinds built with
// strata's scheme package.
package schemetest

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
)

// RoundTrip fills every kind of the API group that install registers with
// random values, and checks that converting it to every external version and
// back, through JSON and YAML, loses nothing. fuzzers set fields whose
// random values are not valid (a quantity, an enum). It is apimachinery's
// round-trip test run over the group, as Kubernetes runs it over its own.
func RoundTrip(t *testing.T, install func(*runtime.Scheme), fuzzers ...fuzzer.FuzzerFuncs) {
	t.Helper()
	funcs := fuzzer.MergeFuzzerFuncs(fuzzers...)
	roundtrip.RoundTripTestForAPIGroup(t, install, func(codecs runtimeserializer.CodecFactory) []any {
		return funcs(codecs)
	})
}
