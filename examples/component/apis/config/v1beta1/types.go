package v1beta1

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

	// Port is the port the component serves on. Default 8443.
	// +k8s:optional
	// +k8s:minimum=1
	// +k8s:maximum=65535
	Port *int32 `json:"port,omitempty"`
	// EnableProfiling enables /debug/pprof handlers. Default true.
	EnableProfiling *bool `json:"enableProfiling,omitempty"`
	// FeatureGates maps feature names to whether they are on; it merges
	// per key across files and --feature-gates.
	FeatureGates map[string]bool `json:"featureGates,omitzero"`
	// TLSCertFile is the serving certificate. A relative path resolves
	// against the directory of the file that set it.
	TLSCertFile string `json:"tlsCertFile,omitempty" strata:"path"`
	// SyncFrequency is how often the component resyncs. Default 1m.
	// Changing it needs a restart.
	SyncFrequency metav1.Duration `json:"syncFrequency,omitempty" strata:"restart-only"`
	// ClientConnection configures the client to the API server; its
	// kubeconfig is a path. Defaults qps 50, burst 100.
	// +k8s:subfield(burst)=+k8s:minimum=0
	ClientConnection componentbaseconfigv1alpha1.ClientConnectionConfiguration `json:"clientConnection"`
	// AllowedOrigins lists the CORS origins allowed. A later layer
	// replaces the whole list; an empty list allows none.
	AllowedOrigins []string `json:"allowedOrigins,omitzero" strata:"not-path"`
	// Logging configures logging.
	Logging logsapi.LoggingConfiguration `json:"logging,omitempty"`
	// HostnameOverride is the name this instance goes by instead of its
	// host name, a DNS subdomain. It belongs to one instance: set it in
	// --instance-config or with --hostname-override, never in the file
	// instances share.
	// +k8s:optional
	// +k8s:format=k8s-long-name
	HostnameOverride string `json:"hostnameOverride,omitempty" strata:"instance-only,not-path"`
	// CgroupDriver is how the component's processes are placed in cgroups.
	// Linux only. Default cgroupfs.
	// +k8s:optional
	CgroupDriver CgroupDriver `json:"cgroupDriver,omitempty" strata:"os=linux,not-path"`
	// WindowsPriorityClass is the priority class of the component's
	// process. Windows only. Default NORMAL_PRIORITY_CLASS.
	// +k8s:optional
	WindowsPriorityClass WindowsPriorityClass `json:"windowsPriorityClass,omitempty" strata:"os=windows,not-path"`
	// AlphaThingMaxItems bounds how many items AlphaThing keeps. It
	// belongs to the AlphaThing feature: setting it while the gate is off
	// is an error naming both.
	// +k8s:optional
	// +k8s:minimum=1
	AlphaThingMaxItems *int32 `json:"alphaThingMaxItems,omitempty" strata:"feature-gate=AlphaThing"`
}

// CgroupDriver is how processes are placed in cgroups.
// +k8s:enum
type CgroupDriver string

const (
	// CgroupDriverCgroupfs manages cgroups through the cgroup filesystem.
	CgroupDriverCgroupfs CgroupDriver = "cgroupfs"
	// CgroupDriverSystemd leaves cgroups to systemd.
	CgroupDriverSystemd CgroupDriver = "systemd"
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
