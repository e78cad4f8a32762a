package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Replica is what one replica's metrics say of the configuration it
// serves.
type Replica struct {
	// URL is the replica's metrics endpoint.
	URL string
	// Hash is the hash of the configuration in effect
	// (<subsystem>_last_config_info), "" when there is none (Err says so).
	Hash string
	// Since is the time of its last successful reload, when it reports
	// one: when what it serves took effect.
	Since time.Time
	// Err says why its metrics could not be read.
	Err error
}

// maxMetricsBytes bounds the metrics read from one replica: a watcher's
// are a few kilobytes, and a process's whole registry rarely passes a
// megabyte.
const maxMetricsBytes = 4 << 20

// ReadReplicas asks each replica's metrics endpoint (a process serving a
// watcher's Metrics in the Prometheus text format) which configuration it
// serves: the hash of <subsystem>_last_config_info and the time of
// <subsystem>_automatic_reload_last_timestamp_seconds{status="success"},
// of the series that carry labels (a watcher's const labels, such as
// {plugin: ...}; nil for any). Compare each Hash with ContentHash of the
// ConfigMaps the replicas mount to tell whether a change has reached
// every one. Each endpoint is read within ctx, at most 4 MiB of it.
func ReadReplicas(ctx context.Context, client *http.Client, subsystem string, labels map[string]string, urls ...string) []Replica {
	out := make([]Replica, len(urls))
	for i, url := range urls {
		out[i] = Replica{URL: url}
		body, err := fetchMetrics(ctx, client, url)
		if err == nil {
			out[i].Hash, out[i].Since, err = replicaState(body, subsystem, labels)
		}
		out[i].Err = err
	}
	return out
}

// fetchMetrics GETs url and returns its body, bounded.
func fetchMetrics(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxMetricsBytes {
		return nil, fmt.Errorf("GET %s: the metrics are over %d bytes", url, maxMetricsBytes)
	}
	return body, nil
}

// replicaState reads the hash in effect and the time of the last
// successful reload from metrics in the text format.
func replicaState(body []byte, subsystem string, labels map[string]string) (hash string, since time.Time, err error) {
	defer func() {
		// The text parser panics on some malformed input (a line
		// starting with "{"): a replica's answer must not crash the
		// caller.
		if r := recover(); r != nil {
			hash, since, err = "", time.Time{}, fmt.Errorf("the metrics do not parse: %v", r)
		}
	}()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the metrics do not parse: %w", err)
	}
	info := families[subsystem+"_last_config_info"]
	if info == nil {
		return "", time.Time{}, fmt.Errorf("no configuration in effect: no %s_last_config_info (nothing loaded yet, or no strata watcher of subsystem %s)", subsystem, subsystem)
	}
	found := false
	for _, m := range info.GetMetric() {
		if matches(m, labels) {
			if found {
				return "", time.Time{}, errors.New("two configurations in effect match the labels: name the watcher's labels")
			}
			found, hash = true, label(m, "hash")
		}
	}
	if !found {
		return "", time.Time{}, fmt.Errorf("no configuration in effect of the watcher labelled %v: its %s_last_config_info has no series of those labels (nothing loaded yet)", labels, subsystem)
	}
	if ts := families[subsystem+"_automatic_reload_last_timestamp_seconds"]; ts != nil {
		for _, m := range ts.GetMetric() {
			if matches(m, labels) && label(m, "status") == StatusSuccess {
				if v := m.GetGauge().GetValue(); v > 0 && v < math.MaxInt64/1e9 {
					sec, frac := math.Modf(v)
					since = time.Unix(int64(sec), int64(frac*1e9)).UTC()
				}
			}
		}
	}
	return hash, since, nil
}

// matches reports whether m carries every label of want.
func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		if label(m, k) != v {
			return false
		}
	}
	return true
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
