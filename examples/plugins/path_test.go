package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// A definition with a map option, a preset that gives it whole, and the
// Plugin it makes on cluster c1.
const (
	mapDefinition = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginDefinition
metadata: {name: app, namespace: org}
spec:
  version: "1"
  options:
  - {name: resources, type: map, required: false}
  - {name: size, type: int, default: 1, required: false}
`
	mapPreset = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginPreset
metadata: {name: p, namespace: org}
spec:
  clusterSelector: {matchLabels: {env: prod}}
  plugin:
    pluginDefinitionRef: {name: app}
    optionValues:
    - name: resources
      value: {limits: {cpu: "1", memory: 1Gi}, requests: {cpu: 100m}, class: standard}
`
)

// override returns a PluginOverride named name for every Plugin of app,
// created at created, with the overrides given as YAML list items.
func override(name, created, items string) string {
	return `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: ` + name + `, namespace: org, creationTimestamp: "` + created + `"}
spec:
  pluginDefinitionNames: [app]
  overrides:
` + items
}

// TestPathEdges: a path over a value from a Secret is an error, as a
// Secret gives the whole value; an override for every plugin names its
// entries by their positions in the object, though it leaves out one this
// definition does not have; and a path keeps every digit of the numbers
// beside it.
func TestPathEdges(t *testing.T) {
	secretPreset := strings.Replace(mapPreset, "      value: {limits: {cpu: \"1\", memory: 1Gi}, requests: {cpu: 100m}, class: standard}\n",
		"      valueFrom: {secret: {name: s, key: resources}}\n", 1)
	dir := scenario(t, mapDefinition, cluster, secretPreset, presetPlugin,
		override("cpu", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits/cpu, value: \"4\"}\n"))
	code, _, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
	if want := `PluginOverride org/cpu spec.overrides[0] (resources): path /limits/cpu: option "resources"'s value comes from a Secret, from PluginPreset org/p, and a Secret gives an option's whole value`; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("a path over a Secret: exit %d, %s; want 1 and %q", code, stderr, want)
	}

	everyPlugin := `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: all, namespace: org}
spec:
  overrides:
  - {name: nosuch, value: 1}
  - {name: resources, path: /limits/cpu, value: "4"}
  - {name: resources, value: {}}
`
	dir = scenario(t, mapDefinition, cluster, mapPreset, presetPlugin, everyPlugin)
	code, _, stderr = runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
	if want := `spec.overrides[1] and spec.overrides[2] both set option "resources", whole and at a path`; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("positions: exit %d, %s; want 1 and %q", code, stderr, want)
	}

	bigPreset := strings.Replace(mapPreset, "class: standard}", "class: standard, maxBytes: 9007199254740993}", 1)
	dir = scenario(t, mapDefinition, cluster, bigPreset, presetPlugin,
		override("cpu", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits/cpu, value: \"4\"}\n"))
	code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
	if got, _ := values(t, out); code != 0 || !strings.Contains(got["resources"], "9007199254740993") {
		t.Errorf("precision: exit %d, %s, resources %s; want 9007199254740993 kept", code, stderr, got["resources"])
	}
}

// TestOverridesInsideAValue: an override with a path sets a key inside a
// map option's value, merging there: the rest of the value stays as the
// layers below give it, and provenance names the override per path. A
// later override's path over it, or a whole value ranked above it, wins; a
// path with no value, a path that crosses a value that is not an object,
// or into an option that is not a map, or with valueFrom, is an error
// naming the override.
func TestOverridesInsideAValue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
		want      string            // resources, on success
		paths     map[string]string // path → source, on success
		shadowed  []string          // substrings of the shadowed sources
		err       string            // or the error
	}{
		{
			name:      "one key inside",
			overrides: []string{override("cpu", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits/cpu, value: \"4\"}\n")},
			want:      `{"class":"standard","limits":{"cpu":"4","memory":"1Gi"},"requests":{"cpu":"100m"}}`,
			paths:     map[string]string{"/limits/cpu": "PluginOverride org/cpu spec.overrides[0] (resources)"},
		},
		{
			name: "two overrides at three paths, a new object among them",
			overrides: []string{
				override("a", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits/gpu, value: {count: 1}}\n  - {name: resources, path: /class, value: large}\n"),
				override("b", "2026-01-02T00:00:00Z", "  - {name: resources, path: /requests/memory, value: 512Mi}\n"),
			},
			want: `{"class":"large","limits":{"cpu":"1","gpu":{"count":1},"memory":"1Gi"},"requests":{"cpu":"100m","memory":"512Mi"}}`,
			paths: map[string]string{"/limits/gpu": "PluginOverride org/a spec.overrides[0] (resources)", "/class": "PluginOverride org/a spec.overrides[1] (resources)",
				"/requests/memory": "PluginOverride org/b spec.overrides[0] (resources)"},
		},
		{
			name: "a newer override's path over an older one's replaces it",
			overrides: []string{
				override("old", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits/cpu, value: \"2\"}\n"),
				override("new", "2026-01-02T00:00:00Z", "  - {name: resources, path: /limits, value: {cpu: \"8\"}}\n"),
			},
			want:     `{"class":"standard","limits":{"cpu":"8"},"requests":{"cpu":"100m"}}`,
			paths:    map[string]string{"/limits": "PluginOverride org/new spec.overrides[0] (resources)"},
			shadowed: []string{"PluginOverride org/old spec.overrides[0] (resources) at /limits/cpu"},
		},
		{
			name: "a whole value ranked above the path wins",
			overrides: []string{
				override("path", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits/cpu, value: \"2\"}\n"),
				override("whole", "2026-01-02T00:00:00Z", "  - {name: resources, value: {limits: {cpu: \"3\"}}}\n"),
			},
			want:     `{"limits":{"cpu":"3"}}`,
			shadowed: []string{"PluginOverride org/path spec.overrides[0] (resources) at /limits/cpu", "PluginPreset org/p"},
		},
		{
			name:      "a path that crosses a value that is not an object",
			overrides: []string{override("bad", "2026-01-01T00:00:00Z", "  - {name: resources, path: /class/name, value: x}\n")},
			err:       `PluginOverride org/bad spec.overrides[0] (resources): path /class/name crosses /class of option "resources", which PluginPreset org/p sets to a value that is not an object`,
		},
		{
			name:      "a path into an option that is not a map",
			overrides: []string{override("bad", "2026-01-01T00:00:00Z", "  - {name: size, path: /x, value: 2}\n")},
			err:       `PluginOverride org/bad: spec.overrides[0] (size): path /x: option "size" is of type int, and only a map's value has paths`,
		},
		{
			name:      "a path with valueFrom",
			overrides: []string{override("bad", "2026-01-01T00:00:00Z", "  - {name: resources, path: /token, valueFrom: {secret: {name: s, key: k}}}\n")},
			err:       `PluginOverride org/bad: spec.overrides[0] (resources): path /token with valueFrom: a Secret gives an option's whole value`,
		},
		{
			name:      "two paths of one override, one within the other",
			overrides: []string{override("bad", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits, value: {}}\n  - {name: resources, path: /limits/cpu, value: \"1\"}\n")},
			err:       `PluginOverride org/bad: spec.overrides[0] and spec.overrides[1] both set option "resources" at paths /limits and /limits/cpu, one within the other`,
		},
		{
			name:      "a path with no value",
			overrides: []string{override("bad", "2026-01-01T00:00:00Z", "  - {name: resources, path: /class}\n")},
			err:       `PluginOverride org/bad: spec.overrides[0] (resources): path /class: no value: give the value to set there`,
		},
		{
			name:      "a path that is no pointer",
			overrides: []string{override("bad", "2026-01-01T00:00:00Z", "  - {name: resources, path: limits.cpu, value: \"1\"}\n")},
			err:       `PluginOverride org/bad: spec.overrides[0] (resources): path "limits.cpu" is no JSON pointer into the value`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := scenario(t, append([]string{mapDefinition, cluster, mapPreset, presetPlugin}, tc.overrides...)...)
			code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
			if tc.err != "" {
				if code != 1 || !strings.Contains(stderr, tc.err) {
					t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, tc.err)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got, res := values(t, out)
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(got["resources"])); err != nil || compact.String() != tc.want {
				t.Errorf("resources = %s, want %s", got["resources"], tc.want)
			}
			vs := res.Provenance["resources"]
			paths := map[string]string{}
			for _, p := range vs.Paths {
				paths[p.Path] = p.Source
			}
			if len(tc.paths) > 0 || len(paths) > 0 {
				if !maps.Equal(paths, tc.paths) {
					t.Errorf("paths %v, want %v", paths, tc.paths)
				}
			}
			for _, want := range tc.shadowed {
				found := false
				for _, s := range vs.Shadowed {
					found = found || strings.Contains(s, want)
				}
				if !found {
					t.Errorf("shadowed %q, want one with %q", vs.Shadowed, want)
				}
			}
		})
	}
}
