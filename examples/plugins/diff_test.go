package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

// writeOverride writes a PluginOverride of namespace demo named name
// with body (its spec, YAML) to a file, and returns its path.
func writeOverride(t *testing.T, name, spec string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	doc := "apiVersion: greenhouse.sap/v1alpha1\nkind: PluginOverride\nmetadata:\n  name: " + name +
		"\n  namespace: demo\n  creationTimestamp: \"2026-03-01T00:00:00Z\"\nspec:\n" + spec
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runDiff(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"diff"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestDiff prints the blast radius of an override before it applies:
// each Plugin it changes, each option before and after with the layer
// deciding it, secrets by reference; nothing when nothing changes; the
// Plugins a bad override breaks, exit 1; and what deleting one changes.
func TestDiff(t *testing.T) {
	const dir = "testdata/greenhouse"
	decode := func(t *testing.T, out string) map[string]greenhouse.PluginDiff {
		t.Helper()
		var ds []greenhouse.PluginDiff
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		m := map[string]greenhouse.PluginDiff{}
		for _, d := range ds {
			m[d.Plugin] = d
		}
		return m
	}

	// Debug logs on prod clusters: the one prod Plugin changes.
	code, out, stderr := runDiff(t, "--from-dir", dir, "--override", writeOverride(t, "prod-debug",
		"  clusterSelector:\n    labelSelector:\n      matchLabels: {tier: prod}\n  overrides:\n  - {name: logLevel, value: debug}\n"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := decode(t, out)
	d, ok := got["demo/monitoring-eu-de-1"]
	if len(got) != 1 || !ok || len(d.Options) != 1 || d.Options[0].Name != "logLevel" ||
		string(*d.Options[0].Before.Value) != `"error"` || string(*d.Options[0].After.Value) != `"debug"` ||
		d.Options[0].BeforeSource != "PluginOverride demo/prod-clusters" || d.Options[0].AfterSource != "PluginOverride demo/prod-debug" {
		t.Errorf("prod debug:\n%s", out)
	}

	// A Secret's key for every monitoring Plugin: a reference, never read.
	_, out, _ = runDiff(t, "--from-dir", dir, "--override", writeOverride(t, "token",
		"  pluginDefinitionNames: [kube-monitoring]\n  overrides:\n  - name: apiToken\n    valueFrom: {secret: {name: rotated, key: token}}\n"))
	if got := decode(t, out); len(got) != 2 || got["demo/monitoring-eu-de-2"].Options[0].After.ValueFrom.Secret.Name != "rotated" {
		t.Errorf("a rotated secret:\n%s", out)
	}

	// What every Plugin has already: nothing to print.
	if code, out, stderr := runDiff(t, "--from-dir", dir, "--override", writeOverride(t, "same",
		"  clusterSelector:\n    labelSelector:\n      matchLabels: {tier: prod}\n  overrides:\n  - {name: logLevel, value: error}\n")); code != 0 || out != "" {
		t.Errorf("no change: exit %d, %q, %s", code, out, stderr)
	}

	// A value of the wrong type breaks every Plugin it selects.
	code, out, stderr = runDiff(t, "--from-dir", dir, "--override", writeOverride(t, "typo", "  overrides:\n  - {name: replicas, value: three}\n"))
	if got := decode(t, out); code != 1 || len(got) != 3 || !strings.Contains(got["demo/cert-manager-us"].Error, `value "three" is not of type int`) ||
		!strings.Contains(stderr, "makes the values of a Plugin invalid") {
		t.Errorf("a typo: exit %d\n%s\n%s", code, out, stderr)
	}

	// Deleting prod-clusters: the prod Plugin falls back.
	code, out, _ = runDiff(t, "--from-dir", dir, "--delete", "--override", writeOverride(t, "prod-clusters", "  overrides: []\n"))
	if got := decode(t, out); code != 0 || len(got["demo/monitoring-eu-de-1"].Options) == 0 || got["demo/monitoring-eu-de-1"].Options[0].After == nil {
		t.Errorf("deleting prod-clusters: exit %d\n%s", code, out)
	}
	if code, _, stderr := runDiff(t, "--from-dir", dir, "--delete", "--override", writeOverride(t, "nope", "  overrides: []\n")); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Errorf("deleting what is not there: exit %d, %s", code, stderr)
	}

	for _, args := range [][]string{{}, {"--from-dir", dir}, {"--override", "x"}, {"--override", "x", "--from-dir", dir, "--kubeconfig", "k"}} {
		if code, _, stderr := runDiff(t, args...); code != 2 || !strings.Contains(stderr, "plugins diff --override FILE") {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
	}
	if code, _, stderr := runDiff(t, "--from-dir", dir, "--override", filepath.Join(dir, "plugins.yaml")); code != 1 || !strings.Contains(stderr, "not a greenhouse.sap/v1alpha1 PluginOverride") {
		t.Errorf("not an override: exit %d, %s", code, stderr)
	}
}
