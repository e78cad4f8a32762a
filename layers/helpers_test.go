package layers_test

import (
	"maps"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	config "github.com/stratacfg/strata/internal/testkind/component"
	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

func reflectType[T any]() reflect.Type { return reflect.TypeFor[T]() }

// oneVersionKind is a kind of one version, v1 of group, named name, whose
// type is obj's.
func oneVersionKind(t *testing.T, group, name string, obj runtime.Object) *scheme.Kind {
	t.Helper()
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	kind, err := scheme.New(scheme.Config{
		Group: group, Kind: name, Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypeWithName(gv.WithKind(name), obj)
			return nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return kind
}

// restartOnlyCert is the test component with its tlsCertFile marked
// restart-only (a serving certificate is loaded at start).
func restartOnlyCert(t *testing.T) *layers.Component[*config.ComponentConfiguration] {
	t.Helper()
	cfg := configscheme.Config()
	cfg.Versions[0].Markers = maps.Clone(cfg.Versions[0].Markers)
	cfg.Versions[0].Markers["/tlsCertFile"] = validation.RestartOnly
	kind, err := scheme.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := component(t)
	c.Kind = kind
	return c
}
