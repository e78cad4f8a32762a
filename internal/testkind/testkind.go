package testkind

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/scheme"
)

// GroupVersion is the kind's only version.
var GroupVersion = schema.GroupVersion{Group: "testkind.strata.dev", Version: "v1"}

// Values of enforced-config-level, the gate.
const (
	LevelCluster   = "cluster"
	LevelNamespace = "namespace"
)

// Defaults of the keys no layer sets.
const (
	DefaultTimeoutSeconds    = int64(3600)
	DefaultMaxTimeoutSeconds = int64(86400)
)

// Defaults are per-namespace defaults. Each field is one ConfigMap key.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Defaults struct {
	metav1.TypeMeta `json:",inline"`

	// DefaultTimeoutSeconds is a default timeout; tenants may set it.
	DefaultTimeoutSeconds *int64 `json:"default-timeout-seconds,omitempty" strata:"overridable"`
	// DefaultServiceAccount is a default service account; tenants may
	// set it.
	DefaultServiceAccount string `json:"default-service-account,omitempty" strata:"overridable,not-path"`
	// MaxTimeoutSeconds bounds the timeout; only the cluster sets it.
	MaxTimeoutSeconds *int64 `json:"max-timeout-seconds,omitempty" strata:"cluster-only"`
	// EnforcedConfigLevel is the gate: "namespace" opens overrides.
	EnforcedConfigLevel string `json:"enforced-config-level,omitempty" strata:"not-path"`
	// NonOverridableFields lists, comma-separated, keys tenants may not
	// set.
	NonOverridableFields string `json:"non-overridable-fields,omitempty" strata:"not-path"`
}

// AddToScheme registers Defaults and its defaulting.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Defaults{})
	s.AddTypeDefaultingFunc(&Defaults{}, func(obj any) { setDefaults(obj.(*Defaults)) })
	return nil
}

func setDefaults(d *Defaults) {
	if d.DefaultTimeoutSeconds == nil {
		d.DefaultTimeoutSeconds = new(DefaultTimeoutSeconds)
	}
	if d.MaxTimeoutSeconds == nil {
		d.MaxTimeoutSeconds = new(DefaultMaxTimeoutSeconds)
	}
	if d.EnforcedConfigLevel == "" {
		d.EnforcedConfigLevel = LevelCluster
	}
}

// Validate checks defaulted Defaults.
func Validate(d *Defaults) field.ErrorList {
	var errs field.ErrorList
	max := *d.MaxTimeoutSeconds
	if max <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("max-timeout-seconds"), max, "must be positive"))
	}
	if t := *d.DefaultTimeoutSeconds; t <= 0 || t > max {
		errs = append(errs, field.Invalid(field.NewPath("default-timeout-seconds"), t, fmt.Sprintf("must be between 1 and max-timeout-seconds (%d)", max)))
	}
	if l := d.EnforcedConfigLevel; l != LevelCluster && l != LevelNamespace {
		errs = append(errs, field.NotSupported(field.NewPath("enforced-config-level"), l, []string{LevelCluster, LevelNamespace}))
	}
	return errs
}

// NewKind returns the strata kind of Defaults.
func NewKind() (*scheme.Kind, error) {
	return scheme.New(scheme.Config{
		Group: GroupVersion.Group, Kind: "Defaults", Hub: GroupVersion.Version,
		Versions: []scheme.Version{{Version: GroupVersion.Version, AddToScheme: AddToScheme}},
		Validate: scheme.Validator(Validate),
	})
}
