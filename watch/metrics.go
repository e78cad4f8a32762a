package watch

import (
	"time"

	"k8s.io/component-base/metrics"
)

// Reload statuses, the values of the status label.
const (
	StatusSuccess = "success"
	StatusFailure = "failure"
	// StatusPending is an attempt whose content is not consistent yet
	// (see Pending): not applied, not a failure.
	StatusPending = "pending"
)

// Metrics are a watcher's reload metrics, named as the automatic reloads of
// kube-apiserver's file-based configuration are (KEP-5793):
//
//	<subsystem>_automatic_reloads_total{status}
//	<subsystem>_automatic_reload_last_timestamp_seconds{status}
//	<subsystem>_last_config_info{hash}
//
// how long each load took (Consistent and Load), how long reading took
// before it (the files, their decompression and the pins that keep a read
// consistent), and how many parts went back to an older version
// (MarkersMove):
//
//	<subsystem>_automatic_reload_duration_seconds{status}
//	<subsystem>_automatic_reload_read_duration_seconds{status}
//	<subsystem>_automatic_reload_rollbacks_total
//
// A no-op check (same content, or content already refused) counts nothing.
// The hash is the one ContentHash computes from the ConfigMaps mounted,
// so an operator can tell whether a change has reached the pod. Metrics
// are safe for concurrent use.
type Metrics struct {
	reloads       *metrics.CounterVec
	lastTimestamp *metrics.GaugeVec
	lastConfig    *metrics.GaugeVec
	duration      *metrics.HistogramVec
	readDuration  *metrics.HistogramVec
	rollbacks     *metrics.Counter
}

// NewMetrics returns the reload metrics of one watcher; subsystem is the
// metric name prefix, for example "example_component", and constLabels,
// when set, label every series (kube-apiserver's admission manifests carry
// {plugin="ValidatingAdmissionPolicy"}, so that one registry holds the
// metrics of several watchers). Register them before use.
func NewMetrics(subsystem string, constLabels map[string]string) *Metrics {
	return &Metrics{
		reloads: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem:      subsystem,
			ConstLabels:    constLabels,
			Name:           "automatic_reloads_total",
			Help:           "Total number of automatic reloads of the configuration, by status.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"status"}),
		lastTimestamp: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Subsystem:      subsystem,
			ConstLabels:    constLabels,
			Name:           "automatic_reload_last_timestamp_seconds",
			Help:           "Time of the last automatic reload of the configuration, in seconds since the epoch, by status.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"status"}),
		lastConfig: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Subsystem:      subsystem,
			ConstLabels:    constLabels,
			Name:           "last_config_info",
			Help:           "The content hash of the configuration in effect; the value is always 1.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"hash"}),
		duration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem:   subsystem,
			ConstLabels: constLabels,
			Name:        "automatic_reload_duration_seconds",
			Help:        "How long loading the configuration took, decoding and validating it, by status.",
			// 1 ms to about 33 s.
			Buckets:        metrics.ExponentialBuckets(0.001, 2, 16),
			StabilityLevel: metrics.ALPHA,
		}, []string{"status"}),
		readDuration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem:   subsystem,
			ConstLabels: constLabels,
			Name:        "automatic_reload_read_duration_seconds",
			Help:        "How long reading the configuration took before each reload attempt, decompression included, by status.",
			// 1 ms to about 33 s.
			Buckets:        metrics.ExponentialBuckets(0.001, 2, 16),
			StabilityLevel: metrics.ALPHA,
		}, []string{"status"}),
		rollbacks: metrics.NewCounter(&metrics.CounterOpts{
			Subsystem:      subsystem,
			ConstLabels:    constLabels,
			Name:           "automatic_reload_rollbacks_total",
			Help:           "Total number of parts of the configuration whose version marker went back to an older one (MarkersMove).",
			StabilityLevel: metrics.ALPHA,
		}),
	}
}

// MustRegister registers the metrics with r; it panics if a metric of the
// same name is registered already.
func (m *Metrics) MustRegister(r metrics.KubeRegistry) {
	r.MustRegister(m.reloads, m.lastTimestamp, m.lastConfig, m.duration, m.readDuration, m.rollbacks)
}

// observe records one reload attempt. hash is the configuration in effect
// after it; read, how long reading took; took, how long loading took
// (negative when reading failed).
func (m *Metrics) observe(status string, at time.Time, hash string, read, took time.Duration, rollbacks int) {
	if m == nil {
		return
	}
	m.readDuration.WithLabelValues(status).Observe(read.Seconds())
	m.rollbacks.Add(float64(rollbacks))
	m.reloads.WithLabelValues(status).Inc()
	m.lastTimestamp.WithLabelValues(status).Set(float64(at.UnixNano()) / 1e9)
	if took >= 0 {
		m.duration.WithLabelValues(status).Observe(took.Seconds())
	}
	if status == StatusSuccess {
		m.inEffect(hash)
	}
}

// inEffect records hash as the configuration in effect.
func (m *Metrics) inEffect(hash string) {
	if m == nil {
		return
	}
	m.lastConfig.Reset()
	m.lastConfig.WithLabelValues(hash).Set(1)
}
