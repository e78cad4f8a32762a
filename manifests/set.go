package manifests

import (
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

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

// validateSet checks the names of objs and objs as a whole set under
// opts: every name is present, valid (opts.ValidateName), unique within
// its kind and ends in opts.NameSuffix (when not empty), and every
// reference opts.References finds resolves inside the set. It returns
// every error at once, each naming the object's source.
func validateSet(objs []*Manifest, opts Options) validation.ErrorList {
	var errs validation.ErrorList
	add := func(m *Manifest, e *field.Error) {
		errs = append(errs, &validation.Error{Err: e, Key: validation.KeyOf(e.Field), Source: m.Source()})
	}
	name := field.NewPath("metadata", "name")
	validateName := opts.ValidateName
	if validateName == nil {
		validateName = apivalidation.NameIsDNSSubdomain
	}
	for _, m := range objs {
		if m.Name == "" {
			add(m, field.Required(name, ""))
		} else if msgs := validateName(m.Name, false); len(msgs) > 0 {
			add(m, field.Invalid(name, m.Name, strings.Join(msgs, "; ")))
		}
	}
	first := map[[2]string]*Manifest{}
	for _, m := range objs {
		if suffix := opts.NameSuffix; suffix != "" && !strings.HasSuffix(m.Name, suffix) {
			add(m, field.Invalid(name, m.Name, fmt.Sprintf("%s names must end in %q", m.Kind, suffix)))
		}
		id := [2]string{m.Kind, m.Name}
		if prev, dup := first[id]; dup {
			add(m, field.Duplicate(name, fmt.Sprintf("%s %s is also defined by %s", m.Kind, m.Name, prev.Source())))
			continue
		}
		first[id] = m
	}
	if opts.References == nil {
		return errs
	}
	for _, m := range objs {
		for _, r := range opts.References(m.Object) {
			if _, ok := first[[2]string{r.Kind, r.Name}]; !ok {
				add(m, field.NotFound(r.Field, fmt.Sprintf("%s %s is not in the set", r.Kind, r.Name)))
			}
		}
	}
	return errs
}
