package pipeline

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/merge"
)

// TestStackFieldByFieldRunsDeclaredValidation: a Stack that sets the keys
// of upper layers field by field refuses what decoding the whole
// configuration refuses, the declarative validation (+k8s: tags) of the
// merge version included, when it is not the hub. The example
// component's v1beta1 port is +k8s:minimum=1 +k8s:maximum=65535, and no
// other check bounds it.
func TestStackFieldByFieldRunsDeclaredValidation(t *testing.T) {
	k, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	if k.MergeVersion() == k.Hub() {
		t.Fatal("the example kind merges in its hub version; the test needs another")
	}
	lower := &merge.Layer{Source: merge.Source{Origin: "cluster", Name: "ops/config"}, Values: map[string]string{"/port": "8443"}}
	st, _, _, err := NewStack[runtime.Object](k, nil, lower)
	if err != nil {
		t.Fatal(err)
	}
	if !st.FieldByField() {
		t.Fatal("the stack decodes whole; the test needs the field-by-field path")
	}
	upper := []*merge.Layer{{Source: merge.Source{Origin: "namespace", Name: "team-a/config"}, Values: map[string]string{"/port": "70000"}}}
	if _, _, _, err := st.Whole().Build(upper); err == nil {
		t.Fatal("the whole decode accepts port 70000; the test expects it refused")
	}
	if _, _, _, err := st.Build(upper); err == nil {
		t.Error("Build, field by field, accepted port 70000, which decoding the whole configuration refuses (+k8s:maximum=65535 of the merge version)")
	}
}
