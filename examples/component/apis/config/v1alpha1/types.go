package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// ComponentConfiguration configures the example component.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ComponentConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Port *int32 `json:"port,omitempty"`
	// Profiling is called enableProfiling in v1beta1.
	Profiling        *bool                                                     `json:"profiling,omitempty"`
	FeatureGates     map[string]bool                                           `json:"featureGates,omitzero"`
	TLSCertFile      string                                                    `json:"tlsCertFile,omitempty" strata:"path"`
	SyncFrequency    metav1.Duration                                           `json:"syncFrequency,omitempty" strata:"restart-only"`
	ClientConnection componentbaseconfigv1alpha1.ClientConnectionConfiguration `json:"clientConnection"`
	AllowedOrigins   []string                                                  `json:"allowedOrigins,omitzero" strata:"not-path"`
	Logging          logsapi.LoggingConfiguration                              `json:"logging,omitempty"`
	// HostnameOverride, CgroupDriver and WindowsPriorityClass are as in
	// v1beta1.
	HostnameOverride     string `json:"hostnameOverride,omitempty" strata:"instance-only,not-path"`
	CgroupDriver         string `json:"cgroupDriver,omitempty" strata:"os=linux,not-path"`
	WindowsPriorityClass string `json:"windowsPriorityClass,omitempty" strata:"os=windows,not-path"`
}
