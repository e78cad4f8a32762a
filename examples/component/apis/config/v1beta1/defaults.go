package v1beta1

import (
	"time"

	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// SetDefaults_ComponentConfiguration fills every field the user left
// unset. An explicit false or zero is kept: only nil pointers are
// defaulted. defaulter-gen registers it.
func SetDefaults_ComponentConfiguration(obj *ComponentConfiguration) {
	if obj.Port == nil {
		obj.Port = new(int32(8443))
	}
	if obj.EnableProfiling == nil {
		obj.EnableProfiling = new(true)
	}
	if obj.SyncFrequency.Duration == 0 {
		obj.SyncFrequency.Duration = time.Minute
	}
	// Each OS's field is defaulted here whatever the OS; the component
	// keeps only the one of the OS it runs on (`strata:"os=..."`).
	if obj.CgroupDriver == "" {
		obj.CgroupDriver = CgroupDriverCgroupfs
	}
	if obj.WindowsPriorityClass == "" {
		obj.WindowsPriorityClass = NormalPriorityClass
	}
	componentbaseconfigv1alpha1.RecommendedDefaultClientConnectionConfiguration(&obj.ClientConnection)
	logsapi.SetRecommendedLoggingConfiguration(&obj.Logging)
}
