package bench

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// TektonStyle is the per-namespace loader of Tekton's TEP-0085
// implementation (tektoncd/pipeline, pkg/apis/config/namespace), written
// for the workload. Tekton keeps the cluster configuration parsed, and on
// every request for a namespace with overrides it:
//
//  1. writes the parsed cluster configuration back into a string map;
//  2. copies that map and sets over it the namespace keys that are on the
//     allowlist (the gate key is never overridable);
//  3. parses the merged map into a new typed configuration, absent keys
//     defaulted, and validates it.
//
// A namespace without overrides gets a copy of the cluster configuration.
// It keeps no provenance; the skipped keys are returned as warnings. (Tekton
// also logs the overridden keys on every call; that is left out here.)
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

// ForNamespace returns the configuration of a namespace whose overrides
// are ns, given the parsed cluster configuration.
func (t *TektonStyle) ForNamespace(cluster *Plain, ns map[string]string) (*Plain, []string, error) {
	if !cluster.Bools[0] || len(ns) == 0 { // the gate, allow-namespace-overrides
		c := *cluster
		return &c, nil, nil
	}
	merged := cluster.ToMap() // (1)
	var warnings []string
	for k, v := range ns { // (2)
		if k == GateKey || !t.allowed[k] {
			warnings = append(warnings, fmt.Sprintf("namespace key %q is not overridable; skipped", k))
			continue
		}
		merged[k] = v
	}
	p, err := ParseFromMap(merged) // (3)
	return p, warnings, err
}

// ToMap writes p back into ConfigMap data.
func (p *Plain) ToMap() map[string]string {
	m := make(map[string]string, 30)
	for i, k := range BoolKeys {
		m[k] = strconv.FormatBool(p.Bools[i])
	}
	for i, k := range IntKeys {
		m[k] = strconv.FormatInt(p.Ints[i], 10)
	}
	for i, k := range DurationKeys {
		m[k] = p.Durations[i].String()
	}
	for i, k := range StringKeys {
		m[k] = p.Strings[i]
	}
	return m
}

// ParseFromMap parses a raw map the way Tekton's NewFeatureFlagsFromMap
// does: each known key, when present, is parsed into its field; an absent
// key takes its default; then the result is validated.
func ParseFromMap(m map[string]string) (*Plain, error) {
	p := DefaultPlain
	err := errors.Join(
		parseKeys(m, BoolKeys[:], p.Bools[:], "a boolean", strconv.ParseBool),
		parseKeys(m, IntKeys[:], p.Ints[:], "an integer", func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }),
		parseKeys(m, DurationKeys[:], p.Durations[:], "a duration", time.ParseDuration),
		parseKeys(m, StringKeys[:], p.Strings[:], "a string", func(s string) (string, error) { return s, nil }),
	)
	if err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// parseKeys parses the value of each of keys present in m into dst.
func parseKeys[T any](m map[string]string, keys []string, dst []T, what string, parse func(string) (T, error)) error {
	for i, k := range keys {
		if v, ok := m[k]; ok {
			x, err := parse(v)
			if err != nil {
				return fmt.Errorf("key %q: %q is not %s", k, v, what)
			}
			dst[i] = x
		}
	}
	return nil
}
