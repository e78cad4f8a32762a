package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stratacfg/strata/layers/namespaced"
)

// countingClient is a client that counts its API requests.
func countingClient(b *testing.B, n *atomic.Int64) kubernetes.Interface {
	cfg := rest.CopyConfig(server.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) { n.Add(1); return rt.RoundTrip(r) })
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkAgainstAPIServer measures, against the real kube-apiserver: the
// requests a lazy resolver makes at start-up with 0 and with 1,000
// namespaces that have overrides; the cold first resolve of a namespace;
// and the propagation from a namespace ConfigMap update to a new snapshot.
func BenchmarkAgainstAPIServer(b *testing.B) {
	f := &fixture{c: server.Client(b), system: fmt.Sprintf("bench-sys-%d", seq.Add(1)), prefix: fmt.Sprintf("b%d-", seq.Load())}
	ctx := context.Background()
	mk := func(name string) {
		if _, err := f.c.CoreV1().Namespaces().Create(ctx, namespaceObject(name), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	mk(f.system)
	if _, err := f.c.CoreV1().ConfigMaps(f.system).Create(ctx, configMapObject(f.system, ClusterConfigMap, nil, openGate), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	startup := func() int64 {
		var n atomic.Int64
		o, err := optionsIn(f.system, 0)
		if err != nil {
			b.Fatal(err)
		}
		o.NoEvents = true
		r, err := namespaced.NewLazy(countingClient(b, &n), o)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Start(ctx); err != nil {
			b.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the informers open their watches after they sync, which nothing announces: the requests counted include them
		got := n.Load()
		r.Stop()
		return got
	}
	before := startup()
	const many = 1000
	names := make([]string, many)
	for i := range names {
		names[i] = fmt.Sprintf("%sns-%d", f.prefix, i)
		mk(names[i])
		if _, err := f.c.CoreV1().ConfigMaps(names[i]).Create(ctx, configMapObject(names[i], OverridesName, OverrideLabels, map[string]string{"default-timeout-seconds": fmt.Sprint(100 + i)}), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	after := startup()

	o, err := optionsIn(f.system, 0)
	if err != nil {
		b.Fatal(err)
	}
	o.NoEvents = true
	r, err := namespaced.NewLazy(f.c, o)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer r.Stop()
	var cold []time.Duration
	for _, ns := range names[:200] {
		start := time.Now()
		if _, err := r.ForNamespace(ctx, ns); err != nil {
			b.Fatal(err)
		}
		cold = append(cold, time.Since(start))
	}

	var prop []time.Duration
	for i := range 100 {
		ns := names[i]
		want := int64(5000 + i)
		cm := configMapObject(ns, OverridesName, OverrideLabels, map[string]string{"default-timeout-seconds": fmt.Sprint(want)})
		start := time.Now()
		if _, err := f.c.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			s, _ := r.ForNamespace(ctx, ns)
			if *s.Object.DefaultTimeoutSeconds == want {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("%s: update not seen after 10s", ns)
			}
			time.Sleep(100 * time.Microsecond) // the latency measured: a reader learns of a change only by reading
		}
		prop = append(prop, time.Since(start))
	}
	// The loop times a cached resolve; the figures above are reported
	// after it, since the loop's start resets user metrics.
	for b.Loop() {
		_, _ = r.ForNamespace(ctx, names[0])
	}
	b.ReportMetric(float64(before), "startup-requests-0ns")
	b.ReportMetric(float64(after), "startup-requests-1000ns")
	b.ReportMetric(float64(percentile(cold, 0.5).Microseconds()), "cold-p50-µs")
	b.ReportMetric(float64(percentile(cold, 0.99).Microseconds()), "cold-p99-µs")
	b.ReportMetric(float64(percentile(prop, 0.5).Microseconds()), "propagation-p50-µs")
	b.ReportMetric(float64(percentile(prop, 0.99).Microseconds()), "propagation-p99-µs")
}
