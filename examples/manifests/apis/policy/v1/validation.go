package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/validation"
)

// NameSuffix ends the name of every static policy object.
const NameSuffix = ".static.strata.dev"

// Validate validates one object.
func Validate(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *Policy:
		if o.Spec.Rule == "" {
			errs = append(errs, field.Required(field.NewPath("spec", "rule"), "a Policy needs a rule"))
		}
	case *PolicyBinding:
		if o.Spec.PolicyName == "" {
			errs = append(errs, field.Required(field.NewPath("spec", "policyName"), "a PolicyBinding names the Policy it applies"))
		}
	}
	return errs
}

// References returns the Policy a PolicyBinding names.
func References(obj runtime.Object) []validation.Reference {
	if b, ok := obj.(*PolicyBinding); ok && b.Spec.PolicyName != "" {
		return []validation.Reference{{Field: field.NewPath("spec", "policyName"), Kind: "Policy", Name: b.Spec.PolicyName}}
	}
	return nil
}
