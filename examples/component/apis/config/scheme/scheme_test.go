package scheme_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/examples/component/apis/config"
	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/scheme/schemetest"
	"github.com/stratacfg/strata/validation"
)

// TestRoundTrip converts random configurations to every version and back,
// through JSON and YAML, and checks that nothing is lost. The generated
// defaults and conversions need no fuzzer function: RoundTrip defaults
// each random object as decoding would.
func TestRoundTrip(t *testing.T) {
	schemetest.RoundTrip(t, configscheme.Install)
}

// TestMarkers fails when a string field of a version is declared neither a
// path nor not a path: adding a path field without saying so fails here.
func TestMarkers(t *testing.T) {
	kind, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range kind.Versions() {
		if f := kind.Fields(schema.GroupVersion{Group: config.GroupName, Version: v.Version}); f != nil {
			validation.CheckStrings(t, f)
		}
	}
}

// TestEmptyIsNotUnset fails when a map or slice field of a version cannot
// tell "set to empty" from "unset": `allowedOrigins: []` in a drop-in
// must allow no origin, whatever the file below lists.
func TestEmptyIsNotUnset(t *testing.T) {
	kind, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	schemetest.CheckEmpty(t, kind)
	schemetest.CheckVersioned(t, kind)
}
