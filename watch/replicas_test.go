package watch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"

	"github.com/stratacfg/strata/internal/watchtest"
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

// TestReadReplicasNoMatchingWatcher: a replica whose metrics hold
// last_config_info only for other watchers serves no configuration of
// the one asked for: no hash, and an error that says so.
func TestReadReplicasNoMatchingWatcher(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	a := NewMetrics("agent", map[string]string{"plugin": "a"})
	a.MustRegister(reg)
	a.observe(StatusSuccess, time.Now(), "sha256:a", time.Millisecond, time.Millisecond, 0)
	srv := httptest.NewServer(metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	defer srv.Close()
	r := ReadReplicas(context.Background(), http.DefaultClient, "agent", map[string]string{"plugin": "b"}, srv.URL)[0]
	if r.Hash != "" || r.Err == nil || !strings.Contains(r.Err.Error(), "no configuration in effect") {
		t.Errorf("plugin b has no configuration in effect: %+v", r)
	}
}

// TestReadReplicasStartedFromInitial: a watcher started from a value the
// caller loaded (Initial, InitialHash, as layers' Component.Watch starts
// one) serves it, and its metrics say so before any reload succeeds.
func TestReadReplicasStartedFromInitial(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	watchtest.WriteFiles(t, dir, map[string]string{"config": "v1"})
	c, err := ReadContents([]string{path}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchtest.WriteFiles(t, dir, map[string]string{"config": "bad"}) // the first read is refused
	reg := metrics.NewKubeRegistry()
	m := NewMetrics("agent", nil)
	m.MustRegister(reg)
	w, _ := newTextWatcher(t, path, func(o *Options[string]) {
		o.Initial, o.InitialHash, o.Metrics = "v1", c.Hash, m
	})
	startOnly(t, w)
	srv := httptest.NewServer(metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	defer srv.Close()
	if r := ReadReplicas(context.Background(), http.DefaultClient, "agent", nil, srv.URL)[0]; r.Hash != c.Hash {
		t.Errorf("the replica serves %s; ReadReplicas says %+v", c.Hash, r)
	}
}
