package namespaced_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/namespacedtest"
)

// TestMetricsRegister registers a resolver's metrics and checks that a
// miss is counted; that after unregistering them nothing is left; that a
// registration that meets a metric of the same name fails and leaves none
// of its metrics behind.
func TestMetricsRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	o := fakeOptions(t)
	o.Metrics = namespaced.NewMetrics("test")
	unregister, err := o.Metrics.Register(reg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := namespacedtest.New(o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"},
		Data: map[string]string{"enforced-config-level": "namespace"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for range 2 {
		if _, err := r.ForNamespace(t.Context(), "team"); err != nil {
			t.Fatal(err)
		}
	}
	if got := gathered(t, reg)["test_namespace_cache_misses_total"]; got != 1 {
		t.Errorf("test_namespace_cache_misses_total %v after two resolves of one namespace, want 1", got)
	}
	unregister()
	if got := gathered(t, reg); len(got) != 0 {
		t.Fatalf("after unregistering: %v", got)
	}
	// The third of the metrics meets one of its name.
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_namespace_cache_evictions_total", Help: "[ALPHA] Number of namespaces evicted from the snapshot cache."})
	reg.MustRegister(other)
	if _, err := namespaced.NewMetrics("test").Register(reg); err == nil {
		t.Fatal("registering over a metric of the same name succeeded")
	}
	if got := gathered(t, reg); len(got) != 1 {
		t.Fatalf("a failed registration left %v", got)
	}
	reg.Unregister(other)
	if _, err := namespaced.NewMetrics("test").Register(reg); err != nil {
		t.Fatalf("registering again: %v", err)
	}
}

// gathered returns the value of each unlabelled counter and gauge reg
// holds, by name.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) > 0 {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				out[mf.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[mf.GetName()] = m.GetGauge().GetValue()
			default:
				out[mf.GetName()] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
