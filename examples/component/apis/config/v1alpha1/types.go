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

	// +k8s:optional
	// +k8s:minimum=1
	// +k8s:maximum=65535
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
	// +k8s:optional
	// +k8s:format=k8s-long-name
	HostnameOverride string `json:"hostnameOverride,omitempty" strata:"instance-only,not-path"`
	// +k8s:optional
	CgroupDriver CgroupDriver `json:"cgroupDriver,omitempty" strata:"os=linux,not-path"`
	// +k8s:optional
	WindowsPriorityClass WindowsPriorityClass `json:"windowsPriorityClass,omitempty" strata:"os=windows,not-path"`
	// AlphaThingMaxItems is as in v1beta1.
	// +k8s:optional
	// +k8s:minimum=1
	AlphaThingMaxItems *int32 `json:"alphaThingMaxItems,omitempty" strata:"feature-gate=AlphaThing"`
}

// CgroupDriver is how processes are placed in cgroups.
// +k8s:enum
type CgroupDriver string

// The cgroup drivers.
const (
	CgroupDriverCgroupfs CgroupDriver = "cgroupfs"
	CgroupDriverSystemd  CgroupDriver = "systemd"
)

// WindowsPriorityClass is the priority class of a Windows process.
// +k8s:enum
type WindowsPriorityClass string

// The Windows priority classes, lowest first.
const (
	IdlePriorityClass        WindowsPriorityClass = "IDLE_PRIORITY_CLASS"
	BelowNormalPriorityClass WindowsPriorityClass = "BELOW_NORMAL_PRIORITY_CLASS"
	NormalPriorityClass      WindowsPriorityClass = "NORMAL_PRIORITY_CLASS"
	AboveNormalPriorityClass WindowsPriorityClass = "ABOVE_NORMAL_PRIORITY_CLASS"
	HighPriorityClass        WindowsPriorityClass = "HIGH_PRIORITY_CLASS"
)
