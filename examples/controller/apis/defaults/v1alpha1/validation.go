package v1alpha1

import (
	"fmt"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted JobDefaults for what the tags of its fields
// cannot say: the declarative validation (the bounds of each number, the
// service account's name) runs before it.
func Validate(d *JobDefaults) field.ErrorList {
	var errs field.ErrorList
	if t, max := *d.DefaultTimeoutSeconds, *d.MaxTimeoutSeconds; t > max && max > 0 {
		errs = append(errs, field.Invalid(field.NewPath("default-timeout-seconds"), t, fmt.Sprintf("must be at most max-timeout-seconds (%d)", max)))
	}
	errs = append(errs, metav1validation.ValidateLabels(d.DefaultLabels, field.NewPath("default-labels"))...)
	if l := d.EnforcedConfigLevel; l != LevelCluster && l != LevelNamespace {
		errs = append(errs, field.NotSupported(field.NewPath("enforced-config-level"), l, []string{LevelCluster, LevelNamespace}))
	}
	return errs
}
