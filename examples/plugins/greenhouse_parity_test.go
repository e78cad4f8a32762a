package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterOverrideReplacesAnExpression: Greenhouse's PluginPreset
// controller applies the cluster's clusterOptionOverrides entry before it
// resolves expressions (pluginpreset_controller.go reconcilePluginPreset:
// applyOverridesToPreset, then resolvePluginOptionValuesForPreset), so an
// expression that entry replaces is never evaluated for that cluster: not
// over a label it lacks, nor with expressions off.
func TestClusterOverrideReplacesAnExpression(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values string
		flags  []string
	}{
		{
			name:   "an expression over a label this cluster lacks, replaced for it",
			values: "    - {name: host, expression: 'h-${global.greenhouse.metadata.zone}'}\n",
		},
		{
			name:   "expressions off, the only expression replaced for this cluster",
			values: "    - {name: host, expression: 'x'}\n",
			flags:  []string{"--expressions=false"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			preset := exprPreset("p", "", tc.values) + `  clusterOptionOverrides:
  - clusterName: c1
    overrides:
    - {name: host, value: plain}
`
			dir := scenario(t, exprDefinition, cluster, presetPlugin, preset)
			code, out, stderr := runTemplate(t, append([]string{"--from-dir", dir, "--plugin", "org/p-c1"}, tc.flags...)...)
			if code != 0 {
				t.Fatalf("exit %d, %s: Greenhouse writes Plugin org/p-c1 with host \"plain\" (the cluster's override replaces the expression before any is evaluated)", code, stderr)
			}
			if got, _ := values(t, out); got["host"] != `"plain"` {
				t.Errorf("host = %s, want \"plain\"", got["host"])
			}
		})
	}
}

// TestStandalonePluginAsGreenhouseStoresIt: Greenhouse's Plugin webhook
// (plugin_webhook.go DefaultPlugin) stores the global.greenhouse.* values
// in every Plugin's spec.optionValues, which no definition declares; a
// standalone Plugin so stored is computed, by template and by diff, those
// values passed by.
func TestStandalonePluginAsGreenhouseStoresIt(t *testing.T) {
	standalone := `apiVersion: greenhouse.sap/v1alpha1
kind: Plugin
metadata: {name: solo, namespace: org}
spec:
  pluginDefinitionRef: {name: app, kind: PluginDefinition}
  clusterName: c1
  optionValues:
  - {name: global.greenhouse.baseDomain, value: ""}
  - {name: global.greenhouse.clusterName, value: c1}
  - {name: global.greenhouse.organizationName, value: org}
  - {name: must, value: x}
  - {name: size, value: 2}
`
	dir := scenario(t, definition, cluster, standalone)
	file := filepath.Join(t.TempDir(), "o.yaml")
	if err := os.WriteFile(file, []byte(override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 9}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runDiff(t, "--override", file, "--from-dir", dir); !strings.Contains(out, "org/solo") {
		t.Errorf("diff of an override setting size 9 for every Plugin of app: exit %d, %q, %q; want Plugin org/solo listed", code, out, stderr)
	}
	code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/solo")
	if code != 0 {
		t.Fatalf("exit %d, %s: a standalone Plugin as Greenhouse stores it cannot be computed", code, stderr)
	}
	if got, _ := values(t, out); got["size"] != "2" || got["must"] != `"x"` {
		t.Errorf("values %v, want size 2 and must \"x\"", got)
	}
}
