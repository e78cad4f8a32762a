package manifests

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateSet(t *testing.T) {
	t.Parallel()
	refs := map[runtime.Object][]Reference{}
	manifest := func(kind, name, file string, doc int, refKind, refName string) *Manifest {
		m := &Manifest{Object: &metav1.PartialObjectMetadata{}, Kind: kind, Name: name, File: file, Document: doc}
		if refKind != "" {
			refs[m.Object] = []Reference{{Field: field.NewPath("spec", "policyName"), Kind: refKind, Name: refName}}
		}
		return m
	}
	cases := []struct {
		name string
		objs []*Manifest
		want []string // one substring per error, in order
	}{
		{"valid", []*Manifest{
			manifest("Policy", "a.x", "a.yaml", 1, "", ""),
			manifest("Binding", "a.x", "a.yaml", 2, "Policy", "a.x"),
		}, nil},
		{"same name, other kind, is fine", []*Manifest{
			manifest("Policy", "a.x", "a.yaml", 0, "", ""),
			manifest("Other", "a.x", "b.yaml", 0, "", ""),
		}, nil},
		{"duplicate", []*Manifest{
			manifest("Policy", "a.x", "a.yaml", 0, "", ""),
			manifest("Policy", "a.x", "b.yaml", 0, "", ""),
		}, []string{"manifest b.yaml: metadata.name: Duplicate value: \"Policy a.x is also defined by manifest a.yaml\""}},
		{"suffix", []*Manifest{manifest("Policy", "a", "a.yaml", 0, "", "")},
			[]string{`manifest a.yaml: metadata.name: Invalid value: "a": Policy names must end in ".x"`}},
		{"no name, and not a DNS subdomain", []*Manifest{
			manifest("Policy", "", "a.yaml", 0, "", ""),
			manifest("Policy", "Bad_Name.x", "b.yaml", 0, "", ""),
		}, []string{"manifest a.yaml: metadata.name: Required value", `manifest b.yaml: metadata.name: Invalid value: "Bad_Name.x"`,
			`manifest a.yaml: metadata.name: Invalid value: "": Policy names must end in ".x"`}},
		{"dangling reference", []*Manifest{manifest("Binding", "b.x", "b.yaml", 0, "Policy", "gone.x")},
			[]string{"manifest b.yaml: spec.policyName: Not found: \"Policy gone.x is not in the set\""}},
	}
	opts := Options{NameSuffix: ".x", References: func(obj runtime.Object) []Reference { return refs[obj] }}
	for _, c := range cases {
		errs := validateSet(c.objs, opts)
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
