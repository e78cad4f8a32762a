package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
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

// AddToScheme registers JobDefaults and its defaulting.
func AddToScheme(s *runtime.Scheme) error {
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

// NewCodec returns the codec of JobDefaults; v1alpha1 is its own hub.
func NewCodec() (*scheme.Codec, error) {
	return scheme.New(scheme.Config{
		Group: GroupName, Kind: "JobDefaults", Hub: "v1alpha1",
		Versions: []scheme.Version{{Version: "v1alpha1", AddToScheme: AddToScheme}},
	})
}

// NewFields returns the field markers of JobDefaults.
func NewFields() (*validation.Fields, error) {
	return validation.FieldsFor(reflect.TypeFor[JobDefaults](), map[string]validation.Marker{
		"/apiVersion": validation.NotPath,
		"/kind":       validation.NotPath,
	})
}
