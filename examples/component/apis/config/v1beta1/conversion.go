package v1beta1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"

	"github.com/stratacfg/strata/examples/component/apis/config"
)

func addConversionFuncs(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*ComponentConfiguration)(nil), (*config.ComponentConfiguration)(nil), func(a, b any, scope conversion.Scope) error {
		return Convert_v1beta1_ComponentConfiguration_To_config_ComponentConfiguration(a.(*ComponentConfiguration), b.(*config.ComponentConfiguration), scope)
	}); err != nil {
		return err
	}
	return s.AddConversionFunc((*config.ComponentConfiguration)(nil), (*ComponentConfiguration)(nil), func(a, b any, scope conversion.Scope) error {
		return Convert_config_ComponentConfiguration_To_v1beta1_ComponentConfiguration(a.(*config.ComponentConfiguration), b.(*ComponentConfiguration), scope)
	})
}

// Convert_v1beta1_ComponentConfiguration_To_config_ComponentConfiguration
// converts this version to the internal type. A nil pointer becomes the zero
// value; defaulting has run before, so only a caller that skips it sees one.
func Convert_v1beta1_ComponentConfiguration_To_config_ComponentConfiguration(in *ComponentConfiguration, out *config.ComponentConfiguration, s conversion.Scope) error {
	c := in.DeepCopyObject().(*ComponentConfiguration)
	out.Port = deref(c.Port)
	out.EnableProfiling = deref(c.EnableProfiling)
	out.FeatureGates = c.FeatureGates
	out.TLSCertFile = c.TLSCertFile
	out.SyncFrequency = c.SyncFrequency
	out.AllowedOrigins = c.AllowedOrigins
	out.Logging = c.Logging
	return componentbaseconfigv1alpha1.Convert_v1alpha1_ClientConnectionConfiguration_To_config_ClientConnectionConfiguration(&c.ClientConnection, &out.ClientConnection, s)
}

// Convert_config_ComponentConfiguration_To_v1beta1_ComponentConfiguration
// converts the internal type to this version.
func Convert_config_ComponentConfiguration_To_v1beta1_ComponentConfiguration(in *config.ComponentConfiguration, out *ComponentConfiguration, s conversion.Scope) error {
	c := in.DeepCopy()
	out.Port = new(c.Port)
	out.EnableProfiling = new(c.EnableProfiling)
	out.FeatureGates = c.FeatureGates
	out.TLSCertFile = c.TLSCertFile
	out.SyncFrequency = c.SyncFrequency
	out.AllowedOrigins = c.AllowedOrigins
	out.Logging = c.Logging
	return componentbaseconfigv1alpha1.Convert_config_ClientConnectionConfiguration_To_v1alpha1_ClientConnectionConfiguration(&c.ClientConnection, &out.ClientConnection, s)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
