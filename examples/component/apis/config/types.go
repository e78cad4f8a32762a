package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbaseconfig "k8s.io/component-base/config"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// ComponentConfiguration is the example component's configuration, as the
// component uses it: every field defaulted and converted.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ComponentConfiguration struct {
	metav1.TypeMeta

	// Port is the port the component serves on.
	Port int32
	// EnableProfiling enables /debug/pprof handlers.
	EnableProfiling bool
	// FeatureGates maps feature names to whether they are on.
	FeatureGates map[string]bool
	// TLSCertFile is the serving certificate, an absolute path once
	// loaded.
	TLSCertFile string
	// SyncFrequency is how often the component resyncs. It takes effect
	// only at start.
	SyncFrequency metav1.Duration
	// ClientConnection configures the client to the API server.
	ClientConnection componentbaseconfig.ClientConnectionConfiguration
	// AllowedOrigins lists the CORS origins allowed.
	AllowedOrigins []string
	// Logging configures logging.
	Logging logsapi.LoggingConfiguration
	// HostnameOverride is the name this instance goes by instead of its
	// host name.
	HostnameOverride string
	// CgroupDriver is how the component's processes are placed in cgroups
	// on Linux: cgroupfs or systemd.
	CgroupDriver string
	// WindowsPriorityClass is the priority class of the component's
	// process on Windows.
	WindowsPriorityClass string
	// AlphaThingMaxItems bounds what AlphaThing keeps; nil when unset,
	// as a field of a gated feature stays unset while its gate is off.
	AlphaThingMaxItems *int32
}
