package manifests

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/validation"
)

// Reference is an object that a field of another object names, which
// must be in the same set.
type Reference struct {
	// Field is the referring field, "spec.policyName".
	Field *field.Path
	Kind  string
	Name  string
}

// member is one object of a set, as the rules of the whole set see it.
type member struct {
	kind, name string
	source     merge.Source // a file and document
	references []Reference
}

// validateSet checks a set of objects as a whole: every name is unique
// within its kind and ends in suffix (when not empty), and every
// reference resolves inside the set. It returns every error at once, each
// naming the object's source.
func validateSet(members []member, suffix string) validation.ErrorList {
	var errs validation.ErrorList
	add := func(m member, e *field.Error) {
		errs = append(errs, &validation.Error{Err: e, Key: validation.KeyOf(e.Field), Source: m.source})
	}
	name := field.NewPath("metadata", "name")
	first := map[[2]string]member{}
	for _, m := range members {
		if suffix != "" && !strings.HasSuffix(m.name, suffix) {
			add(m, field.Invalid(name, m.name, fmt.Sprintf("%s names must end in %q", m.kind, suffix)))
		}
		id := [2]string{m.kind, m.name}
		if prev, dup := first[id]; dup {
			add(m, field.Duplicate(name, fmt.Sprintf("%s %s is also defined by %s", m.kind, m.name, prev.source)))
			continue
		}
		first[id] = m
	}
	for _, m := range members {
		for _, r := range m.references {
			if _, ok := first[[2]string{r.Kind, r.Name}]; !ok {
				add(m, field.NotFound(r.Field, fmt.Sprintf("%s %s is not in the set", r.Kind, r.Name)))
			}
		}
	}
	return errs
}
