package watch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
)

// TestReadReplicas reads what replicas' metrics say they serve: the hash
// in effect and since when, by their const labels; a replica that reports
// none, serves something else or cannot be reached says so.
func TestReadReplicas(t *testing.T) {
	at := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	serve := func(record func(a, b *Metrics)) string {
		reg := metrics.NewKubeRegistry()
		a, b := NewMetrics("agent", map[string]string{"plugin": "a"}), NewMetrics("agent", map[string]string{"plugin": "b"})
		a.MustRegister(reg)
		b.MustRegister(reg)
		record(a, b)
		srv := httptest.NewServer(metrics.HandlerFor(reg, metrics.HandlerOpts{}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	current := serve(func(a, b *Metrics) {
		a.observe(StatusSuccess, at, "sha256:new", time.Millisecond, time.Millisecond, 0)
		b.observe(StatusSuccess, at, "sha256:other", time.Millisecond, time.Millisecond, 0)
	})
	behind := serve(func(a, b *Metrics) {
		a.observe(StatusSuccess, at.Add(-time.Hour), "sha256:old", time.Millisecond, time.Millisecond, 0)
		a.observe(StatusFailure, at, "sha256:old", time.Millisecond, time.Millisecond, 0) // the new one refused
	})
	none := serve(func(a, b *Metrics) {})
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	got := ReadReplicas(context.Background(), http.DefaultClient, "agent", map[string]string{"plugin": "a"}, current, behind, none, gone.URL)
	if r := got[0]; r.Err != nil || r.Hash != "sha256:new" || !r.Since.Equal(at) {
		t.Errorf("current: %+v", r)
	}
	if r := got[1]; r.Err != nil || r.Hash != "sha256:old" || !r.Since.Equal(at.Add(-time.Hour)) {
		t.Errorf("behind: %+v", r)
	}
	if r := got[2]; r.Err == nil || !strings.Contains(r.Err.Error(), "no configuration in effect") || r.Hash != "" {
		t.Errorf("nothing loaded yet: %+v", r)
	}
	if r := got[3]; r.Err == nil {
		t.Errorf("unreachable: %+v", r)
	}
	if r := ReadReplicas(context.Background(), http.DefaultClient, "agent", nil, current)[0]; r.Err == nil || !strings.Contains(r.Err.Error(), "two configurations") {
		t.Errorf("two watchers, no labels: %+v", r)
	}
	if r := ReadReplicas(context.Background(), http.DefaultClient, "other", nil, current)[0]; r.Err == nil || !strings.Contains(r.Err.Error(), "no other_last_config_info") {
		t.Errorf("another subsystem: %+v", r)
	}
}

// FuzzReplicaState feeds arbitrary metrics text to the reader: it never
// panics, and a hash it reads is one the text holds.
func FuzzReplicaState(f *testing.F) {
	f.Add([]byte("# TYPE agent_last_config_info gauge\nagent_last_config_info{hash=\"sha256:a\"} 1\nagent_automatic_reload_last_timestamp_seconds{status=\"success\"} 1.7e9\n"))
	f.Add([]byte("agent_last_config_info{hash=\"x\"} 1\nagent_last_config_info{hash=\"y\"} 1\n"))
	f.Add([]byte("agent_automatic_reload_last_timestamp_seconds{status=\"success\"} 1e300\n"))
	f.Add([]byte("{{{"))
	f.Add([]byte(`agent_last_config_info{hash="a\\b\"c\nd"} 1` + "\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		hash, _, err := replicaState(body, "agent", nil)
		// A label value is written escaped in the text.
		escaped := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(hash)
		if err == nil && hash != "" && !strings.Contains(string(body), escaped) {
			t.Fatalf("read hash %q the text does not hold", hash)
		}
	})
}
