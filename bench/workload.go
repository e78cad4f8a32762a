package bench

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/scheme"
)

// The workload's keys, by type. Every library reads the same 30 keys.
var (
	BoolKeys = [10]string{
		"allow-namespace-overrides", "enable-retries", "enable-metrics", "enable-tracing", "enable-sidecars",
		"keep-pod-on-cancel", "send-events", "require-signed-images", "allow-privileged", "coschedule-workspaces",
	}
	IntKeys = [10]string{
		"max-retries", "parallelism", "max-concurrent-runs", "log-lines", "results-size-bytes",
		"workspace-size-mb", "cpu-millis", "memory-mb", "history-limit", "priority",
	}
	DurationKeys = [5]string{"default-timeout", "retry-backoff", "heartbeat-interval", "grace-period", "result-ttl"}
	StringKeys   = [5]string{"log-level", "service-account", "image-pull-policy", "scheduler-name", "managed-by"}
)

// GateKey opens namespace overrides when the cluster layer sets it to
// "true". It is one of the ten booleans.
const GateKey = "allow-namespace-overrides"

// Overridable are the keys a namespace may set: the five of the overlay.
var Overridable = []string{"enable-retries", "max-retries", "parallelism", "default-timeout", "log-level"}

// ClusterData is the cluster ConfigMap's data: every one of the 30 keys.
func ClusterData() map[string]string {
	return map[string]string{
		"allow-namespace-overrides": "true", "enable-retries": "true", "enable-metrics": "true", "enable-tracing": "false",
		"enable-sidecars": "true", "keep-pod-on-cancel": "false", "send-events": "true", "require-signed-images": "false",
		"allow-privileged": "false", "coschedule-workspaces": "true",
		"max-retries": "3", "parallelism": "4", "max-concurrent-runs": "100", "log-lines": "500", "results-size-bytes": "4096",
		"workspace-size-mb": "1024", "cpu-millis": "500", "memory-mb": "512", "history-limit": "10", "priority": "5",
		"default-timeout": "1h", "retry-backoff": "10s", "heartbeat-interval": "30s", "grace-period": "30s", "result-ttl": "24h",
		"log-level": "info", "service-account": "runner", "image-pull-policy": "IfNotPresent", "scheduler-name": "default-scheduler",
		"managed-by": "strata-bench",
	}
}

// NamespaceData is the 5-key namespace overlay. It sets an explicit false
// and an explicit zero, which must win over the cluster's true and 3.
func NamespaceData() map[string]string {
	return map[string]string{
		"enable-retries": "false", "max-retries": "0", "parallelism": "8", "default-timeout": "30m", "log-level": "debug",
	}
}

// Plain is the effective configuration as plain values, what every library
// under test must arrive at; fields are in the order of the key lists.
type Plain struct {
	Bools     [10]bool
	Ints      [10]int64
	Durations [5]time.Duration
	Strings   [5]string
}

// DefaultPlain holds the value of every key no layer sets.
var DefaultPlain = Plain{
	Bools:     [10]bool{false, true, true, false, true, false, true, false, false, true},
	Ints:      [10]int64{3, 1, 50, 1000, 4096, 512, 250, 256, 5, 0},
	Durations: [5]time.Duration{time.Hour, 10 * time.Second, 30 * time.Second, 30 * time.Second, 24 * time.Hour},
	Strings:   [5]string{"info", "default", "IfNotPresent", "default-scheduler", "strata"},
}

// Expected is the effective configuration of the cluster data alone, and
// with the namespace overlay.
func Expected(overlay bool) Plain {
	p := Plain{
		Bools:     [10]bool{true, true, true, false, true, false, true, false, false, true},
		Ints:      [10]int64{3, 4, 100, 500, 4096, 1024, 500, 512, 10, 5},
		Durations: [5]time.Duration{time.Hour, 10 * time.Second, 30 * time.Second, 30 * time.Second, 24 * time.Hour},
		Strings:   [5]string{"info", "runner", "IfNotPresent", "default-scheduler", "strata-bench"},
	}
	if overlay {
		p.Bools[1], p.Ints[0], p.Ints[1], p.Durations[0], p.Strings[0] = false, 0, 8, 30*time.Minute, "debug"
	}
	return p
}

// Check validates p the way Validate validates Settings, with the same
// messages, for the loaders that parse by hand.
func (p *Plain) Check() error {
	for i, n := range p.Ints {
		if n < 0 {
			return fmt.Errorf("%s: %d must not be negative", IntKeys[i], n)
		}
	}
	if p.Ints[1] < 1 {
		return fmt.Errorf("parallelism: %d must be at least 1", p.Ints[1])
	}
	for i, d := range p.Durations {
		if d <= 0 {
			return fmt.Errorf("%s: %s must be positive", DurationKeys[i], d)
		}
	}
	if !logLevels[p.Strings[0]] {
		return fmt.Errorf("log-level: %q is not one of debug, info, warn, error", p.Strings[0])
	}
	if !pullPolicies[p.Strings[2]] {
		return fmt.Errorf("image-pull-policy: %q is not one of Always, IfNotPresent, Never", p.Strings[2])
	}
	return nil
}

var (
	logLevels    = map[string]bool{"debug": true, "info": true, "warn": true, "error": true}
	pullPolicies = map[string]bool{"Always": true, "IfNotPresent": true, "Never": true}
)

// GroupVersion is the workload's configuration API, its own hub.
var GroupVersion = schema.GroupVersion{Group: "bench.strata.dev", Version: "v1"}

// Settings is the workload as a strata configuration kind: one field per
// ConfigMap key, pointers where "unset" differs from the zero value.
type Settings struct {
	metav1.TypeMeta `json:",inline"`

	AllowNamespaceOverrides *bool `json:"allow-namespace-overrides,omitempty"`
	EnableRetries           *bool `json:"enable-retries,omitempty" strata:"overridable"`
	EnableMetrics           *bool `json:"enable-metrics,omitempty"`
	EnableTracing           *bool `json:"enable-tracing,omitempty"`
	EnableSidecars          *bool `json:"enable-sidecars,omitempty"`
	KeepPodOnCancel         *bool `json:"keep-pod-on-cancel,omitempty"`
	SendEvents              *bool `json:"send-events,omitempty"`
	RequireSignedImages     *bool `json:"require-signed-images,omitempty"`
	AllowPrivileged         *bool `json:"allow-privileged,omitempty"`
	CoscheduleWorkspaces    *bool `json:"coschedule-workspaces,omitempty"`

	MaxRetries        *int64 `json:"max-retries,omitempty" strata:"overridable"`
	Parallelism       *int64 `json:"parallelism,omitempty" strata:"overridable"`
	MaxConcurrentRuns *int64 `json:"max-concurrent-runs,omitempty"`
	LogLines          *int64 `json:"log-lines,omitempty"`
	ResultsSizeBytes  *int64 `json:"results-size-bytes,omitempty"`
	WorkspaceSizeMB   *int64 `json:"workspace-size-mb,omitempty"`
	CPUMillis         *int64 `json:"cpu-millis,omitempty"`
	MemoryMB          *int64 `json:"memory-mb,omitempty"`
	HistoryLimit      *int64 `json:"history-limit,omitempty"`
	Priority          *int64 `json:"priority,omitempty"`

	DefaultTimeout    *metav1.Duration `json:"default-timeout,omitempty" strata:"overridable"`
	RetryBackoff      *metav1.Duration `json:"retry-backoff,omitempty"`
	HeartbeatInterval *metav1.Duration `json:"heartbeat-interval,omitempty"`
	GracePeriod       *metav1.Duration `json:"grace-period,omitempty"`
	ResultTTL         *metav1.Duration `json:"result-ttl,omitempty"`

	LogLevel        string `json:"log-level,omitempty" strata:"overridable,not-path"`
	ServiceAccount  string `json:"service-account,omitempty" strata:"not-path"`
	ImagePullPolicy string `json:"image-pull-policy,omitempty" strata:"not-path"`
	SchedulerName   string `json:"scheduler-name,omitempty" strata:"not-path"`
	ManagedBy       string `json:"managed-by,omitempty" strata:"not-path"`
}

// bools, ints and durations return pointers to the fields in key order.
func (s *Settings) bools() [10]**bool {
	return [10]**bool{&s.AllowNamespaceOverrides, &s.EnableRetries, &s.EnableMetrics, &s.EnableTracing, &s.EnableSidecars,
		&s.KeepPodOnCancel, &s.SendEvents, &s.RequireSignedImages, &s.AllowPrivileged, &s.CoscheduleWorkspaces}
}

func (s *Settings) ints() [10]**int64 {
	return [10]**int64{&s.MaxRetries, &s.Parallelism, &s.MaxConcurrentRuns, &s.LogLines, &s.ResultsSizeBytes,
		&s.WorkspaceSizeMB, &s.CPUMillis, &s.MemoryMB, &s.HistoryLimit, &s.Priority}
}

func (s *Settings) durations() [5]**metav1.Duration {
	return [5]**metav1.Duration{&s.DefaultTimeout, &s.RetryBackoff, &s.HeartbeatInterval, &s.GracePeriod, &s.ResultTTL}
}

func (s *Settings) strings() [5]*string {
	return [5]*string{&s.LogLevel, &s.ServiceAccount, &s.ImagePullPolicy, &s.SchedulerName, &s.ManagedBy}
}

// DeepCopyObject implements runtime.Object.
func (s *Settings) DeepCopyObject() runtime.Object {
	out := *s
	b, n, d := out.bools(), out.ints(), out.durations()
	copyPointees(b[:])
	copyPointees(n[:])
	copyPointees(d[:])
	return &out
}

// copyPointees points every set pointer at a copy of its value.
func copyPointees[T any](ps []**T) {
	for _, p := range ps {
		if *p != nil {
			*p = new(**p)
		}
	}
}

// SetDefaults fills the keys no layer set from DefaultPlain.
func SetDefaults(s *Settings) {
	b, n := s.bools(), s.ints()
	defaultPointees(b[:], DefaultPlain.Bools[:])
	defaultPointees(n[:], DefaultPlain.Ints[:])
	for i, p := range s.durations() {
		if *p == nil {
			*p = &metav1.Duration{Duration: DefaultPlain.Durations[i]}
		}
	}
	for i, p := range s.strings() {
		if *p == "" {
			*p = DefaultPlain.Strings[i]
		}
	}
}

// defaultPointees points every pointer not set at its default.
func defaultPointees[T any](ps []**T, defaults []T) {
	for i, p := range ps {
		if *p == nil {
			*p = new(defaults[i])
		}
	}
}

// Plain returns the values of a defaulted Settings.
func (s *Settings) Plain() Plain {
	var p Plain
	for i, f := range s.bools() {
		p.Bools[i] = **f
	}
	for i, f := range s.ints() {
		p.Ints[i] = **f
	}
	for i, f := range s.durations() {
		p.Durations[i] = (*f).Duration
	}
	for i, f := range s.strings() {
		p.Strings[i] = *f
	}
	return p
}

// Validate checks a defaulted Settings: every error at once, with the
// field path.
func Validate(s *Settings) field.ErrorList {
	var errs field.ErrorList
	for i, f := range s.ints() {
		if **f < 0 {
			errs = append(errs, field.Invalid(field.NewPath(IntKeys[i]), **f, "must not be negative"))
		}
	}
	if *s.Parallelism < 1 {
		errs = append(errs, field.Invalid(field.NewPath("parallelism"), *s.Parallelism, "must be at least 1"))
	}
	for i, f := range s.durations() {
		if (*f).Duration <= 0 {
			errs = append(errs, field.Invalid(field.NewPath(DurationKeys[i]), (*f).Duration.String(), "must be positive"))
		}
	}
	if !logLevels[s.LogLevel] {
		errs = append(errs, field.NotSupported(field.NewPath("log-level"), s.LogLevel, []string{"debug", "info", "warn", "error"}))
	}
	if !pullPolicies[s.ImagePullPolicy] {
		errs = append(errs, field.NotSupported(field.NewPath("image-pull-policy"), s.ImagePullPolicy, []string{"Always", "IfNotPresent", "Never"}))
	}
	return errs
}

// NewKind returns the strata kind of Settings.
func NewKind() (*scheme.Kind, error) {
	return scheme.New(scheme.Config{
		Group: GroupVersion.Group, Kind: "Settings", Hub: GroupVersion.Version,
		Versions: []scheme.Version{{Version: GroupVersion.Version, AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypes(GroupVersion, &Settings{})
			s.AddTypeDefaultingFunc(&Settings{}, func(o any) { SetDefaults(o.(*Settings)) })
			return nil
		}}},
		Validate: scheme.Validator(Validate),
	})
}

// ConfigMap returns a ConfigMap holding data.
func ConfigMap(namespace, name, resourceVersion string, labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: resourceVersion, Labels: labels},
		Data:       data,
	}
}
