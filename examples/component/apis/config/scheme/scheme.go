// Package scheme builds the strata kind of the example component's
// configuration: its versions, their markers, the merge version and the
// validator.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/examples/component/apis/config"
	"github.com/stratacfg/strata/examples/component/apis/config/v1alpha1"
	"github.com/stratacfg/strata/examples/component/apis/config/v1beta1"
	configvalidation "github.com/stratacfg/strata/examples/component/apis/config/validation"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// Config is the kind's declaration: v1beta1 preferred, and the version
// layers are merged in; v1alpha1 deprecated; v1alpha0 removed.
func Config() scheme.Config {
	return scheme.Config{
		Group:    config.GroupName,
		Kind:     "ComponentConfiguration",
		Internal: config.AddToScheme,
		Versions: []scheme.Version{
			{Version: "v1beta1", AddToScheme: v1beta1.AddToScheme, Markers: map[string]validation.Marker{
				// The server is bound to the port at start.
				"/port": validation.RestartOnly,
			}, Fields: []scheme.Field{
				{Key: "/profiling", Lifecycle: scheme.Removed, RenamedTo: "/enableProfiling", Release: "v0.3"},
				{Key: "/insecurePort", Lifecycle: scheme.Removed, Release: "v0.3", Message: "the component serves TLS only, on port"},
			}},
			{Version: "v1alpha1", AddToScheme: v1alpha1.AddToScheme, Lifecycle: scheme.Deprecated, Release: "v0.3", Fields: []scheme.Field{
				{Key: "/profiling", Lifecycle: scheme.Deprecated, Release: "v0.3", Message: "v1beta1 calls it enableProfiling; --migrate-config rewrites the file"},
			}},
			{Version: "v1alpha0", Lifecycle: scheme.Removed, Release: "v0.2",
				Migrate: "`component --config FILE --print-config` with release v0.1, which prints the file as v1alpha1"},
		},
		MergeVersion: "v1beta1",
		Validate:     scheme.Validator(configvalidation.Validate),
	}
}

// NewKind returns the kind.
func NewKind() (*scheme.Kind, error) { return scheme.New(Config()) }

// Install registers every version of the kind in s, for tests.
func Install(s *runtime.Scheme) {
	for _, add := range []func(*runtime.Scheme) error{config.AddToScheme, v1beta1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
}
