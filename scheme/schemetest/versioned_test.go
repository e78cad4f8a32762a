package schemetest_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/internal/testkind"
	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/scheme/schemetest"
)

// borrowing is a versioned type that holds a type of an internal
// package, at the top and below a list of structs.
type borrowing struct {
	metav1.TypeMeta `json:",inline"`
	Port            int `json:"port"`
	Pools           []struct {
		Defaults *testkind.Defaults `json:"defaults"`
	} `json:"pools"`
	Own testkind.Defaults `json:"own"`
}

func (in *borrowing) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}

// TestCheckVersioned names each field of a versioned type whose type comes
// from an internal package, and passes a kind whose versions have types of
// their own (the library tests' component, whose hub is internal).
func TestCheckVersioned(t *testing.T) {
	gv := schema.GroupVersion{Group: "borrowing.strata.dev", Version: "v1"}
	k, err := scheme.New(scheme.Config{Group: gv.Group, Kind: "Borrowing", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypeWithName(gv.WithKind("Borrowing"), &borrowing{})
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	schemetest.CheckVersioned(&r, k)
	got := strings.Join(r.errs, "\n")
	for _, want := range []string{
		"field /pools/defaults of borrowing.strata.dev/v1 has type testkind.Defaults from github.com/stratacfg/strata/internal/testkind, which is not versioned",
		"field /own of borrowing.strata.dev/v1 has type testkind.Defaults",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CheckVersioned did not report\n%s\nin:\n%s", want, got)
		}
	}
	if len(r.errs) != 2 {
		t.Errorf("CheckVersioned reported %d fields, want 2:\n%s", len(r.errs), got)
	}

	component, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	var clean recorder
	schemetest.CheckVersioned(&clean, component)
	if len(clean.errs) > 0 {
		t.Errorf("the component's versions: %q", clean.errs)
	}
}
