package v1alpha1_test

import (
	"testing"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/scheme/schemetest"
	"github.com/stratacfg/strata/validation"
)

// TestKind checks the kind's fields: every string field says whether it
// is a path, and every map field tells "set to empty" from "unset", so
// that a tenant's `default-labels: "{}"` means no default labels.
func TestKind(t *testing.T) {
	k, err := v1alpha1.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	validation.CheckStrings(t, k.MergeFields())
	schemetest.CheckEmpty(t, k)
	schemetest.CheckVersioned(t, k)
}
