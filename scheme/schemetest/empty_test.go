package schemetest_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/scheme/schemetest"
)

// listsConfig has one map or slice field for each way it can lose an
// empty value, and two that keep it.
type listsConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Dropped loses [] to omitempty.
	Dropped []string `json:"dropped,omitempty" strata:"not-path"`
	// Defaulted loses [] to a defaulter that tests its length.
	Defaulted []string `json:"defaulted,omitzero" strata:"not-path"`
	// Kept and Labels keep {} and []: omitzero, defaulted when nil.
	Kept   []string          `json:"kept,omitzero" strata:"not-path"`
	Labels map[string]string `json:"labels,omitzero"`
	// Declared loses [] to omitempty, and says that empty means unset.
	Declared []string `json:"declared,omitempty" strata:"not-path,empty-is-unset"`
	Nested   struct {
		Hosts map[string]string `json:"hosts,omitempty"`
	} `json:"nested"`
}

func (in *listsConfig) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}

func TestCheckEmpty(t *testing.T) {
	gv := schema.GroupVersion{Group: "lists.strata.dev", Version: "v1"}
	k, err := scheme.New(scheme.Config{Group: gv.Group, Kind: "ListsConfig", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypeWithName(gv.WithKind("ListsConfig"), &listsConfig{})
			s.AddTypeDefaultingFunc(&listsConfig{}, func(obj any) {
				c := obj.(*listsConfig)
				if len(c.Defaulted) == 0 {
					c.Defaulted = []string{"a"}
				}
				if c.Kept == nil {
					c.Kept = []string{"a"}
				}
			})
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	schemetest.CheckEmpty(&r, k)
	got := strings.Join(r.errs, "\n")
	for _, want := range []string{
		`field /dropped of lists.strata.dev/v1 cannot tell empty from unset: set to [], it is gone once encoded (omitempty drops it: use omitzero, or mark it empty-is-unset)`,
		`field /defaulted of lists.strata.dev/v1 cannot tell empty from unset: set to [], defaulting makes it ["a"] (default it only when nil, or mark it empty-is-unset)`,
		`field /nested/hosts of lists.strata.dev/v1 cannot tell empty from unset: set to {}, it is gone once encoded`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CheckEmpty did not report\n%s\nin:\n%s", want, got)
		}
	}
	if len(r.errs) != 3 {
		t.Errorf("CheckEmpty reported %d fields, want 3:\n%s", len(r.errs), got)
	}
}
