package v1alpha1

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted JobDefaults.
func Validate(d *JobDefaults) field.ErrorList {
	var errs field.ErrorList
	max := *d.MaxTimeoutSeconds
	if max <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("max-timeout-seconds"), max, "must be positive"))
	}
	if t := *d.DefaultTimeoutSeconds; t <= 0 || t > max {
		errs = append(errs, field.Invalid(field.NewPath("default-timeout-seconds"), t, fmt.Sprintf("must be between 1 and max-timeout-seconds (%d)", max)))
	}
	if ttl := d.DefaultTTLSecondsAfterFinished; ttl != nil && *ttl < 0 {
		errs = append(errs, field.Invalid(field.NewPath("default-ttl-seconds-after-finished"), *ttl, "must not be negative"))
	}
	if sa := d.DefaultServiceAccount; sa != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(sa, false) {
			errs = append(errs, field.Invalid(field.NewPath("default-service-account"), sa, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(d.DefaultLabels, field.NewPath("default-labels"))...)
	if l := d.EnforcedConfigLevel; l != LevelCluster && l != LevelNamespace {
		errs = append(errs, field.NotSupported(field.NewPath("enforced-config-level"), l, []string{LevelCluster, LevelNamespace}))
	}
	if n := *d.NamespaceConfigCacheSize; n <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("namespace-config-cache-size"), n, "must be positive"))
	}
	return errs
}
