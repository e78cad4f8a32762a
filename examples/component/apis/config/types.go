package config

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbaseconfig "k8s.io/component-base/config"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// ComponentConfiguration is the example component's configuration, as the
// component uses it: every field defaulted and converted.
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
}

// DeepCopyInto copies in into out.
func (in *ComponentConfiguration) DeepCopyInto(out *ComponentConfiguration) {
	*out = *in
	out.FeatureGates = maps.Clone(in.FeatureGates)
	out.AllowedOrigins = slices.Clone(in.AllowedOrigins)
	in.Logging.DeepCopyInto(&out.Logging)
}

// DeepCopy returns a copy of in.
func (in *ComponentConfiguration) DeepCopy() *ComponentConfiguration {
	if in == nil {
		return nil
	}
	out := new(ComponentConfiguration)
	in.DeepCopyInto(out)
	return out
}
