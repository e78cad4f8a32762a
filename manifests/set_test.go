package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/merge"
)

func TestValidateSet(t *testing.T) {
	t.Parallel()
	src := func(n string) merge.Source { return merge.Source{Origin: "manifest", Name: n} }
	ref := func(kind, name string) []Reference {
		return []Reference{{Field: field.NewPath("spec", "policyName"), Kind: kind, Name: name}}
	}
	cases := []struct {
		name    string
		members []member
		want    []string // one substring per error, in order
	}{
		{"valid", []member{
			{kind: "Policy", name: "a.x", source: src("a.yaml#1")},
			{kind: "Binding", name: "a.x", source: src("a.yaml#2"), references: ref("Policy", "a.x")},
		}, nil},
		{"same name, other kind, is fine", []member{
			{kind: "Policy", name: "a.x", source: src("a.yaml")},
			{kind: "Other", name: "a.x", source: src("b.yaml")},
		}, nil},
		{"duplicate", []member{
			{kind: "Policy", name: "a.x", source: src("a.yaml")},
			{kind: "Policy", name: "a.x", source: src("b.yaml")},
		}, []string{"manifest b.yaml: metadata.name: Duplicate value: \"Policy a.x is also defined by manifest a.yaml\""}},
		{"suffix", []member{{kind: "Policy", name: "a", source: src("a.yaml")}},
			[]string{`manifest a.yaml: metadata.name: Invalid value: "a": Policy names must end in ".x"`}},
		{"dangling reference", []member{{kind: "Binding", name: "b.x", source: src("b.yaml"), references: ref("Policy", "gone.x")}},
			[]string{"manifest b.yaml: spec.policyName: Not found: \"Policy gone.x is not in the set\""}},
	}
	for _, c := range cases {
		errs := validateSet(c.members, ".x")
		if len(errs) != len(c.want) {
			t.Errorf("%s: %d errors, want %d: %v", c.name, len(errs), len(c.want), errs)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("%s: error %q, want %q", c.name, errs[i], w)
			}
		}
	}
}
