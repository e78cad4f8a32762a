package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	config "github.com/stratacfg/strata/internal/testkind/component"
)

// Convert_v1alpha1_ComponentConfiguration_To_component_ComponentConfiguration
// converts what conversion-gen cannot: profiling, which the internal type
// calls EnableProfiling.
func Convert_v1alpha1_ComponentConfiguration_To_component_ComponentConfiguration(in *ComponentConfiguration, out *config.ComponentConfiguration, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_ComponentConfiguration_To_component_ComponentConfiguration(in, out, s); err != nil {
		return err
	}
	return metav1.Convert_Pointer_bool_To_bool(&in.Profiling, &out.EnableProfiling, s)
}

// Convert_component_ComponentConfiguration_To_v1alpha1_ComponentConfiguration
// converts EnableProfiling back to profiling.
func Convert_component_ComponentConfiguration_To_v1alpha1_ComponentConfiguration(in *config.ComponentConfiguration, out *ComponentConfiguration, s conversion.Scope) error {
	if err := autoConvert_component_ComponentConfiguration_To_v1alpha1_ComponentConfiguration(in, out, s); err != nil {
		return err
	}
	out.Profiling = new(in.EnableProfiling)
	return nil
}
