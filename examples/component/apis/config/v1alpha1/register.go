package v1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/examples/component/apis/config"
	"github.com/stratacfg/strata/examples/component/apis/config/v1beta1"
)

// GroupName is the API group of the configuration kind.
const GroupName = "component.example.strata.dev"

// SchemeGroupVersion is this version.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

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
	out := &ComponentConfiguration{TypeMeta: in.TypeMeta}
	fromBeta(toBeta(in), out)
	return out
}

func addDefaultingFuncs(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&ComponentConfiguration{}, func(obj any) { SetDefaults(obj.(*ComponentConfiguration)) })
	return nil
}

// SetDefaults applies the v1beta1 defaults.
func SetDefaults(obj *ComponentConfiguration) {
	b := toBeta(obj)
	v1beta1.SetDefaults(b)
	fromBeta(b, obj)
}

func addConversionFuncs(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*ComponentConfiguration)(nil), (*config.ComponentConfiguration)(nil), func(a, b any, scope conversion.Scope) error {
		return v1beta1.Convert_v1beta1_ComponentConfiguration_To_config_ComponentConfiguration(toBeta(a.(*ComponentConfiguration)), b.(*config.ComponentConfiguration), scope)
	}); err != nil {
		return err
	}
	return s.AddConversionFunc((*config.ComponentConfiguration)(nil), (*ComponentConfiguration)(nil), func(a, b any, scope conversion.Scope) error {
		var beta v1beta1.ComponentConfiguration
		if err := v1beta1.Convert_config_ComponentConfiguration_To_v1beta1_ComponentConfiguration(a.(*config.ComponentConfiguration), &beta, scope); err != nil {
			return err
		}
		fromBeta(&beta, b.(*ComponentConfiguration))
		return nil
	})
}

// toBeta returns a deep copy of in as v1beta1: the field-for-field
// conversion of the two versions, which differ only in a name.
func toBeta(in *ComponentConfiguration) *v1beta1.ComponentConfiguration {
	b := &v1beta1.ComponentConfiguration{
		TypeMeta:         in.TypeMeta,
		Port:             in.Port,
		EnableProfiling:  in.Profiling,
		FeatureGates:     in.FeatureGates,
		TLSCertFile:      in.TLSCertFile,
		SyncFrequency:    in.SyncFrequency,
		ClientConnection: in.ClientConnection,
		AllowedOrigins:   in.AllowedOrigins,
		Logging:          in.Logging,
	}
	return b.DeepCopyObject().(*v1beta1.ComponentConfiguration)
}

// fromBeta sets out to a deep copy of b.
func fromBeta(b *v1beta1.ComponentConfiguration, out *ComponentConfiguration) {
	c := b.DeepCopyObject().(*v1beta1.ComponentConfiguration)
	*out = ComponentConfiguration{
		TypeMeta:         out.TypeMeta,
		Port:             c.Port,
		Profiling:        c.EnableProfiling,
		FeatureGates:     c.FeatureGates,
		TLSCertFile:      c.TLSCertFile,
		SyncFrequency:    c.SyncFrequency,
		ClientConnection: c.ClientConnection,
		AllowedOrigins:   c.AllowedOrigins,
		Logging:          c.Logging,
	}
}
