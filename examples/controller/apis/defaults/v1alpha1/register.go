package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/scheme"
)

// GroupName is the configuration's API group.
const GroupName = "defaults.example.strata.dev"

// SchemeGroupVersion is defaults.example.strata.dev/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Values of enforced-config-level.
const (
	LevelCluster   = "cluster"
	LevelNamespace = "namespace"
)

// Defaults of the keys no layer sets.
const (
	DefaultTimeoutSeconds    = int64(3600)
	DefaultMaxTimeoutSeconds = int64(86400)
	DefaultCacheSize         = int32(1000)
)

var (
	// SchemeBuilder registers JobDefaults, its defaulting and its
	// declarative validation (zz_generated.validations.go adds itself).
	SchemeBuilder      = runtime.NewSchemeBuilder(addKnownTypes)
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme registers the version in a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &JobDefaults{})
	s.AddTypeDefaultingFunc(&JobDefaults{}, func(obj any) { SetDefaults(obj.(*JobDefaults)) })
	return nil
}

// SetDefaults fills the keys no layer set.
func SetDefaults(d *JobDefaults) {
	if d.DefaultTimeoutSeconds == nil {
		d.DefaultTimeoutSeconds = new(DefaultTimeoutSeconds)
	}
	if d.MaxTimeoutSeconds == nil {
		d.MaxTimeoutSeconds = new(DefaultMaxTimeoutSeconds)
	}
	if d.EnforcedConfigLevel == "" {
		d.EnforcedConfigLevel = LevelCluster
	}
	if d.NamespaceConfigCacheSize == nil {
		d.NamespaceConfigCacheSize = new(DefaultCacheSize)
	}
}

// NewKind returns the strata kind of JobDefaults; v1alpha1 is its own hub.
func NewKind() (*scheme.Kind, error) {
	return scheme.New(scheme.Config{
		Group: GroupName, Kind: "JobDefaults", Hub: "v1alpha1",
		Versions: []scheme.Version{{Version: "v1alpha1", AddToScheme: AddToScheme, Fields: []scheme.Field{
			// As Tekton's config-defaults moved from minutes to seconds.
			{Key: "/default-timeout-minutes", Lifecycle: scheme.Removed, RenamedTo: "/default-timeout-seconds", Release: "v0.2", Message: "give the timeout in seconds"},
		}}},
		Validate: scheme.Validator(Validate),
	})
}
