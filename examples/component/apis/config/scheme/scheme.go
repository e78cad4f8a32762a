// Package scheme builds the strata codec and field markers of the example
// component's configuration kind.
package scheme

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/examples/component/apis/config"
	"github.com/stratacfg/strata/examples/component/apis/config/v1alpha1"
	"github.com/stratacfg/strata/examples/component/apis/config/v1beta1"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// Config is the kind's declaration: v1beta1 preferred, v1alpha1
// deprecated, v1alpha0 removed.
func Config() scheme.Config {
	return scheme.Config{
		Group:    config.GroupName,
		Kind:     "ComponentConfiguration",
		Internal: config.AddToScheme,
		Versions: []scheme.Version{
			{Version: "v1beta1", AddToScheme: v1beta1.AddToScheme},
			{Version: "v1alpha1", AddToScheme: v1alpha1.AddToScheme, Lifecycle: scheme.Deprecated, Release: "v0.3"},
			{Version: "v1alpha0", Lifecycle: scheme.Removed, Release: "v0.2",
				Migrate: "`component --config FILE --print-config` with release v0.1, which prints the file as v1alpha1"},
		},
	}
}

// NewCodec returns the codec of the kind.
func NewCodec() (*scheme.Codec, error) { return scheme.New(Config()) }

// Install registers every version of the kind in s, for tests.
func Install(s *runtime.Scheme) {
	for _, add := range []func(*runtime.Scheme) error{config.AddToScheme, v1beta1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
}

// NewFields returns the field markers of v1beta1: those in its struct tags,
// and those of the component-base structs it embeds.
func NewFields() (*validation.Fields, error) {
	return validation.FieldsFor(reflect.TypeFor[v1beta1.ComponentConfiguration](), map[string]validation.Marker{
		"/clientConnection/kubeconfig": validation.Path,
		// The server is bound to the port at start.
		"/port":                                validation.RestartOnly,
		"/clientConnection/acceptContentTypes": validation.NotPath,
		"/clientConnection/contentType":        validation.NotPath,
		"/logging/format":                      validation.NotPath,
		"/apiVersion":                          validation.NotPath,
		"/kind":                                validation.NotPath,
	})
}
