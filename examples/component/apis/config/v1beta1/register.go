package v1beta1

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the configuration kind.
const GroupName = "component.example.strata.dev"

// SchemeGroupVersion is this version.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

var (
	// SchemeBuilder registers the types, defaults and conversions.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs, addConversionFuncs)
	// AddToScheme adds this version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &ComponentConfiguration{})
	return nil
}

// DeepCopyObject implements runtime.Object.
func (in *ComponentConfiguration) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(ComponentConfiguration)
	*out = *in
	if in.Port != nil {
		out.Port = new(*in.Port)
	}
	if in.EnableProfiling != nil {
		out.EnableProfiling = new(*in.EnableProfiling)
	}
	out.FeatureGates = maps.Clone(in.FeatureGates)
	out.AllowedOrigins = slices.Clone(in.AllowedOrigins)
	in.Logging.DeepCopyInto(&out.Logging)
	return out
}
