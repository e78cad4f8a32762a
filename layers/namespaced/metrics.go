package namespaced

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"
)

// Metrics are a Resolver's metrics:
//
//	<subsystem>_namespace_cache_size              namespaces with a cached snapshot
//	<subsystem>_namespace_cache_misses_total      ForNamespace calls that built a snapshot
//	<subsystem>_namespace_cache_evictions_total   namespaces evicted from the cache (CLOCK)
//	<subsystem>_namespace_watches                 cached namespaces the shared watch follows (lazy mode), gate open or closed
//	<subsystem>_resolve_duration_seconds          time to resolve a namespace on a miss
//	<subsystem>_rejected_tenant_keys_total{reason} keys a tenant policy dropped, per snapshot built
//	<subsystem>_invalid_configmaps_total{kind}    ConfigMaps ignored or refused as invalid
//
// Hits are neither counted nor timed: one atomic add costs as much as the
// whole lock-free read (about 5 ns), and under parallel reconciles it would
// be contended. Misses count the snapshots built; against the controller's
// own count of reconciles they give the hit ratio. Unregistered metrics
// count nothing.
type Metrics struct {
	cacheSize *metrics.Gauge
	misses    *metrics.Counter
	evictions *metrics.Counter
	watches   *metrics.Gauge
	latency   *metrics.Histogram
	rejected  *metrics.CounterVec
	invalid   *metrics.CounterVec
}

// NewMetrics returns a resolver's metrics; subsystem is the metric
// name prefix, for example "example_controller". Register them with
// Register.
func NewMetrics(subsystem string) *Metrics {
	gauge := func(name, help string) *metrics.Gauge {
		return metrics.NewGauge(&metrics.GaugeOpts{Subsystem: subsystem, Name: name, Help: help, StabilityLevel: metrics.ALPHA})
	}
	counter := func(name, help string) *metrics.Counter {
		return metrics.NewCounter(&metrics.CounterOpts{Subsystem: subsystem, Name: name, Help: help, StabilityLevel: metrics.ALPHA})
	}
	return &Metrics{
		cacheSize: gauge("namespace_cache_size", "Number of namespaces with a cached configuration snapshot."),
		misses:    counter("namespace_cache_misses_total", "Number of namespace resolves that built a snapshot."),
		evictions: counter("namespace_cache_evictions_total", "Number of namespaces evicted from the snapshot cache."),
		watches:   gauge("namespace_watches", "Number of cached namespaces whose ConfigMaps the shared watch follows (lazy mode)."),
		latency: metrics.NewHistogram(&metrics.HistogramOpts{
			Subsystem: subsystem, Name: "resolve_duration_seconds",
			Help:           "Time to resolve a namespace's configuration when it is not cached.",
			Buckets:        metrics.ExponentialBuckets(0.0001, 4, 9),
			StabilityLevel: metrics.ALPHA,
		}),
		rejected: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem: subsystem, Name: "rejected_tenant_keys_total",
			Help:           "Number of keys a tenant policy dropped from namespace or selector layers, per snapshot built, by reason.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"reason"}),
		invalid: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem: subsystem, Name: "invalid_configmaps_total",
			Help:           "Number of invalid ConfigMaps ignored (namespace, selector) or refused (cluster), by kind.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"kind"}),
	}
}

// Register registers the metrics with r and returns how to unregister
// them, as a resolver that failed to start, or a test, needs. r is a
// Prometheus registerer, such as controller-runtime's metrics.Registry,
// which serves the manager's /metrics, or a component-base registry's
// (legacyregistry.Registerer(), KubeRegistry.Registerer()), whose Reset
// then leaves them as they are. On an error nothing stays registered.
func (m *Metrics) Register(r prometheus.Registerer) (unregister func(), err error) {
	cs := m.collectors()
	unregister = func() {
		for _, c := range cs {
			r.Unregister(c)
		}
	}
	for i, c := range cs {
		c.Create(nil) // what a KubeRegistry does before registering
		if err := r.Register(c); err != nil {
			for _, done := range cs[:i] {
				r.Unregister(done)
			}
			return nil, err
		}
	}
	return unregister, nil
}

func (m *Metrics) collectors() []metrics.Registerable {
	return []metrics.Registerable{m.cacheSize, m.misses, m.evictions, m.watches, m.latency, m.rejected, m.invalid}
}
