package validation

import (
	"reflect"

	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// readyMade holds the markers of the configuration structs of
// k8s.io/component-base, by type, keyed below wherever a configuration
// embeds them: a component that embeds ClientConnectionConfiguration gets
// its kubeconfig declared a path without declaring it.
var readyMade = map[reflect.Type]map[string]Marker{
	reflect.TypeFor[componentbaseconfigv1alpha1.ClientConnectionConfiguration](): {
		"/kubeconfig":         Path,
		"/acceptContentTypes": NotPath,
		"/contentType":        NotPath,
	},
	reflect.TypeFor[componentbaseconfigv1alpha1.LeaderElectionConfiguration](): {
		"/resourceLock":      NotPath,
		"/resourceName":      NotPath,
		"/resourceNamespace": NotPath,
	},
	reflect.TypeFor[logsapi.LoggingConfiguration](): {
		"/format": NotPath,
		// omitempty drops an empty vmodule: it means unset.
		"/vmodule": EmptyIsUnset,
		// A pattern of Go source file names, matched, never opened.
		"/vmodule/*/filePattern": NotPath,
	},
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
