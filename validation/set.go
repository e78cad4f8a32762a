package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/merge"
)

// Member is one object of a set of manifests, as set validation sees it.
type Member struct {
	Kind string
	Name string
	// Source says where the object was read: a file and document.
	Source merge.Source
	// References are the objects this one names, which must be in the
	// same set.
	References []Reference
}

// Reference is an object that a field of another object names.
type Reference struct {
	// Field is the referring field, "spec.policyName".
	Field *field.Path
	Kind  string
	Name  string
}

// SetRules are the rules a whole set obeys.
type SetRules struct {
	// NameSuffix, when not empty, is required at the end of every name
	// (KEP-5793's ".static.k8s.io"), so that a static object can never be
	// confused with, or shadowed by, one from the API.
	NameSuffix string
}

// ValidateSet checks a set of objects as a whole: every name is unique
// within its kind, carries the required suffix, and every reference
// resolves inside the set. It returns every error at once, each naming the
// object's source.
func ValidateSet(members []Member, rules SetRules) ErrorList {
	var errs ErrorList
	add := func(m Member, e *field.Error) {
		errs = append(errs, &Error{Err: e, Key: KeyOf(e.Field), Source: m.Source})
	}
	name := field.NewPath("metadata", "name")
	first := map[[2]string]Member{}
	for _, m := range members {
		if rules.NameSuffix != "" && !strings.HasSuffix(m.Name, rules.NameSuffix) {
			add(m, field.Invalid(name, m.Name, fmt.Sprintf("%s names must end in %q", m.Kind, rules.NameSuffix)))
		}
		id := [2]string{m.Kind, m.Name}
		if prev, dup := first[id]; dup {
			add(m, field.Duplicate(name, fmt.Sprintf("%s %s is also defined by %s", m.Kind, m.Name, prev.Source)))
			continue
		}
		first[id] = m
	}
	for _, m := range members {
		for _, r := range m.References {
			if _, ok := first[[2]string{r.Kind, r.Name}]; !ok {
				add(m, field.NotFound(r.Field, fmt.Sprintf("%s %s is not in the set", r.Kind, r.Name)))
			}
		}
	}
	return errs
}
