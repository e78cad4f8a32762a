package bench

import (
	"fmt"
	"strconv"
	"time"
)

// TektonStyle is the loader TEP-0085 describes, written for the workload:
// keep the cluster and namespace ConfigMaps as raw string maps, and on
// every request merge them (namespace keys on the allowlist win, the gate
// key is never overridable) and parse the merged map into the typed
// configuration, defaulting absent keys and validating. It keeps no
// provenance.
type TektonStyle struct {
	allowed map[string]bool
}

// NewTektonStyle returns the loader with the workload's allowlist.
func NewTektonStyle() *TektonStyle {
	t := &TektonStyle{allowed: map[string]bool{}}
	for _, k := range Overridable {
		t.allowed[k] = true
	}
	return t
}

// MergeAndParse merges ns over cluster when the cluster's gate is open and
// parses the result. The Warnings are the namespace keys it skipped.
func (t *TektonStyle) MergeAndParse(cluster, ns map[string]string) (*Plain, []string, error) {
	merged := cluster
	var warnings []string
	if cluster[GateKey] == "true" && len(ns) > 0 {
		merged = make(map[string]string, len(cluster)+len(ns))
		for k, v := range cluster {
			merged[k] = v
		}
		for k, v := range ns {
			if k == GateKey || !t.allowed[k] {
				warnings = append(warnings, fmt.Sprintf("namespace key %q is not overridable; skipped", k))
				continue
			}
			merged[k] = v
		}
	}
	p, err := ParseFromMap(merged)
	return p, warnings, err
}

// ParseFromMap parses a raw map the way Tekton's NewFeatureFlagsFromMap
// does: each known key, when present, is parsed into its field; an absent
// key takes its default; then the result is validated.
func ParseFromMap(m map[string]string) (*Plain, error) {
	p := DefaultPlain
	for i, k := range BoolKeys {
		if v, ok := m[k]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("key %q: %q is not a boolean", k, v)
			}
			p.Bools[i] = b
		}
	}
	for i, k := range IntKeys {
		if v, ok := m[k]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("key %q: %q is not an integer", k, v)
			}
			p.Ints[i] = n
		}
	}
	for i, k := range DurationKeys {
		if v, ok := m[k]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("key %q: %q is not a duration", k, v)
			}
			p.Durations[i] = d
		}
	}
	for i, k := range StringKeys {
		if v, ok := m[k]; ok {
			p.Strings[i] = v
		}
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}
