package v1alpha1

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// JobDefaults are the defaults given to Jobs. Each field is one ConfigMap
// key; a namespace may set those tagged overridable, when the cluster
// ConfigMap's enforced-config-level is "namespace".
type JobDefaults struct {
	metav1.TypeMeta `json:",inline"`

	// DefaultTimeoutSeconds sets spec.activeDeadlineSeconds on a Job that
	// has none.
	// +k8s:optional
	// +k8s:minimum=1
	DefaultTimeoutSeconds *int64 `json:"default-timeout-seconds,omitempty" strata:"overridable"`
	// DefaultTTLSecondsAfterFinished sets spec.ttlSecondsAfterFinished
	// on a Job that has none. Unset: no default.
	// +k8s:optional
	// +k8s:minimum=0
	DefaultTTLSecondsAfterFinished *int32 `json:"default-ttl-seconds-after-finished,omitempty" strata:"overridable"`
	// DefaultServiceAccount sets the pod template's serviceAccountName
	// when it is empty. Empty: no default.
	// +k8s:optional
	// +k8s:format=k8s-long-name
	DefaultServiceAccount string `json:"default-service-account,omitempty" strata:"overridable,not-path"`
	// DefaultLabels are added to a Job's labels when absent. In the
	// ConfigMap, a YAML map inside the string.
	DefaultLabels map[string]string `json:"default-labels,omitzero" strata:"overridable,not-path"`
	// MaxTimeoutSeconds bounds every default timeout.
	// +k8s:optional
	// +k8s:minimum=1
	MaxTimeoutSeconds *int64 `json:"max-timeout-seconds,omitempty" strata:"cluster-only"`
	// EnforcedConfigLevel is "cluster" (namespaces may not override) or
	// "namespace" (they may override the overridable keys).
	EnforcedConfigLevel string `json:"enforced-config-level,omitempty" strata:"not-path"`
	// NonOverridableFields lists, comma-separated, keys namespaces may
	// not set even though they are overridable.
	NonOverridableFields string `json:"non-overridable-fields,omitempty" strata:"not-path"`
	// NamespaceConfigCacheSize is how many namespaces the controller
	// keeps resolved; it takes effect at start.
	// +k8s:optional
	// +k8s:minimum=1
	NamespaceConfigCacheSize *int32 `json:"namespace-config-cache-size,omitempty" strata:"cluster-only,restart-only"`
}

// DeepCopyObject implements runtime.Object.
func (in *JobDefaults) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := *in
	if in.DefaultTimeoutSeconds != nil {
		out.DefaultTimeoutSeconds = new(*in.DefaultTimeoutSeconds)
	}
	if in.DefaultTTLSecondsAfterFinished != nil {
		out.DefaultTTLSecondsAfterFinished = new(*in.DefaultTTLSecondsAfterFinished)
	}
	if in.MaxTimeoutSeconds != nil {
		out.MaxTimeoutSeconds = new(*in.MaxTimeoutSeconds)
	}
	if in.NamespaceConfigCacheSize != nil {
		out.NamespaceConfigCacheSize = new(*in.NamespaceConfigCacheSize)
	}
	out.DefaultLabels = maps.Clone(in.DefaultLabels)
	return &out
}
