package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
	"github.com/stratacfg/strata/internal/watchtest"
)

// runTemplate runs `plugins template` with args.
func runTemplate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr watchtest.Buffer
	code := run(context.Background(), append([]string{"template"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// values returns name → value JSON, compact (or "secret NAME#KEY"), of a
// result.
func values(t *testing.T, out string) (map[string]string, *greenhouse.Result) {
	t.Helper()
	var res greenhouse.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not the result: %v\n%s", err, out)
	}
	m := map[string]string{}
	for _, v := range res.OptionValues {
		switch {
		case v.ValueFrom != nil:
			m[v.Name] = "secret " + v.ValueFrom.Secret.Name + "#" + v.ValueFrom.Secret.Key
		default:
			var b bytes.Buffer
			if json.Compact(&b, *v.Value) != nil {
				t.Fatalf("%s: %s is no JSON", v.Name, *v.Value)
			}
			m[v.Name] = b.String()
		}
	}
	return m, &res
}

// TestTemplateFromDir computes the testdata's Plugins: the order of the
// ladder, references kept whole, provenance, overrides applied in order,
// and what was left out with why.
func TestTemplateFromDir(t *testing.T) {
	code, out, stderr := runTemplate(t, "--from-dir", "testdata/greenhouse", "--plugin", "demo/monitoring-eu-de-1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, res := values(t, out)
	want := map[string]string{
		"alerts.enabled": "true",                        // the definition's default
		"alerts.webhook": "secret alerting#webhook-url", // the preset's reference, kept
		"apiToken":       "secret monitoring-api#token", // a reference above a literal
		"logLevel":       `"error"`,                     // by cluster, above the org-wide one
		"replicas":       "3",                           // the preset's override for eu-de-1
		"retention":      `"90d"`,                       // by both, created before the others
	}
	if !maps.Equal(got, want) {
		t.Errorf("values\n%v\nwant\n%v", got, want)
	}
	if !slices.IsSortedFunc(res.OptionValues, func(a, b greenhouse.OptionValue) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("optionValues are not sorted by name")
	}
	if p := res.Provenance["retention"]; p.Source != "PluginOverride demo/monitoring-prod" ||
		strings.Join(p.Shadowed, "|") != "PluginOverride demo/monitoring-everywhere|PluginOverride demo/prod-clusters|PluginDefinition demo/kube-monitoring (default)" {
		t.Errorf("provenance of retention: %+v", p)
	}
	if strings.Join(res.AppliedOverrides, "|") != "PluginOverride demo/org-wide|PluginOverride demo/prod-clusters|PluginOverride demo/monitoring-everywhere|PluginOverride demo/monitoring-prod" {
		t.Errorf("appliedOverrides %v", res.AppliedOverrides)
	}
	var ignored []string
	for _, ig := range res.Ignored {
		ignored = append(ignored, ig.Source+": "+ig.Reason)
	}
	for _, want := range []string{
		"PluginPreset demo/monitoring spec.clusterOptionOverrides[1] (cluster us-east-1): cluster us-east-1 is not selected by the PluginPreset's clusterSelector (region=eu): this override never applies",
		"PluginOverride demo/cert-manager-crds: pluginDefinition kube-monitoring is not among cert-manager",
	} {
		if !slices.Contains(ignored, want) {
			t.Errorf("ignored lacks %q:\n%s", want, strings.Join(ignored, "\n"))
		}
	}

	// eu-de-2: qa, not prod; monitoring-prod ignores it by name too.
	_, out, _ = runTemplate(t, "--from-dir", "testdata/greenhouse", "--plugin", "demo/monitoring-eu-de-2")
	got, res = values(t, out)
	if got["replicas"] != "2" || got["retention"] != `"14d"` || got["logLevel"] != `"warn"` {
		t.Errorf("eu-de-2: %v", got)
	}
	for _, ig := range res.Ignored {
		if ig.Source == "PluginOverride demo/monitoring-prod" && ig.Reason != "eu-de-2 is among the names left out" {
			t.Errorf("monitoring-prod left out because %q", ig.Reason)
		}
	}
}

// templateCase runs `plugins template` for org/p-c1 on dir with flags:
// with wantErr, it checks that the command fails saying so, with nothing
// on stdout, and returns its stderr and no values; otherwise that it
// succeeds, and returns its values and result.
func templateCase(t *testing.T, dir, wantErr string, flags ...string) (map[string]string, *greenhouse.Result, string) {
	t.Helper()
	code, out, stderr := runTemplate(t, append([]string{"--from-dir", dir, "--plugin", "org/p-c1"}, flags...)...)
	if wantErr != "" {
		if code != 1 || out != "" || !strings.Contains(stderr, wantErr) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, and %q", code, out, stderr, wantErr)
		}
		return nil, nil, stderr
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, res := values(t, out)
	return got, res, stderr
}

// scenario is a directory of manifests for one case.
func scenario(t *testing.T, docs ...string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for i, d := range docs {
		files[filepath.Join("m", string(rune('a'+i))+".yaml")] = d
	}
	watchtest.WriteFiles(t, dir, files)
	return filepath.Join(dir, "m")
}

const (
	definition = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginDefinition
metadata: {name: app, namespace: org}
spec:
  version: "1"
  options:
  - {name: token, type: string, default: changeme, required: false}
  - {name: size, type: int, default: 1, required: false}
  - {name: password, type: secret, required: false}
  - {name: must, type: string, required: true}
`
	cluster = `apiVersion: greenhouse.sap/v1alpha1
kind: Cluster
metadata: {name: c1, namespace: org, labels: {env: prod}}
`
	presetHead = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginPreset
metadata: {name: p, namespace: org}
spec:
  clusterSelector: {matchLabels: {env: prod}}
  plugin:
    pluginDefinitionRef: {name: app}
`
	presetPlugin = `apiVersion: greenhouse.sap/v1alpha1
kind: Plugin
metadata: {name: p-c1, namespace: org, labels: {greenhouse.sap/pluginpreset: p}}
spec:
  pluginDefinitionRef: {name: app}
  clusterName: c1
`
)

// TestWhereGreenhouseLosesAValue runs the cases where Greenhouse v0.16
// silently ignores or loses a value: strata keeps the value or refuses
// the input, naming it.
func TestWhereGreenhouseLosesAValue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		preset string
		want   map[string]string // values, on success
		err    string            // or the error
	}{
		{
			name: "a reference over a name the definition defaults: kept whole (Greenhouse ends with neither)",
			preset: `    optionValues:
    - {name: must, value: x}
    - name: token
      valueFrom: {secret: {name: s, key: k}}
`,
			want: map[string]string{"token": "secret s#k", "size": "1", "must": `"x"`},
		},
		{
			name: "a second entry for one cluster: refused (Greenhouse ignores it silently)",
			preset: `    optionValues:
    - {name: must, value: x}
  clusterOptionOverrides:
  - clusterName: c1
    overrides: [{name: size, value: 2}]
  - clusterName: c1
    overrides: [{name: size, value: 3}]
`,
			err: "PluginPreset org/p: spec.clusterOptionOverrides[1] and spec.clusterOptionOverrides[0] both override cluster c1",
		},
		{
			name: "an option twice in one list: refused with both positions",
			preset: `    optionValues:
    - {name: must, value: x}
    - {name: size, value: 2}
    - {name: size, value: 3}
`,
			err: "PluginPreset org/p: spec.plugin.optionValues[1] and spec.plugin.optionValues[2] both set option \"size\"",
		},
		{
			name: "an option the definition does not have",
			preset: `    optionValues:
    - {name: must, value: x}
    - {name: sise, value: 2}
`,
			err: `PluginPreset org/p: spec.plugin.optionValues[1] (sise): org/app has no option "sise"`,
		},
		{
			name:   "a required option no layer sets",
			preset: "    optionValues: []\n",
			err:    `option "must" is required by PluginDefinition org/app and no layer sets it`,
		},
		{
			name: "a value of the wrong type",
			preset: `    optionValues:
    - {name: must, value: x}
    - {name: size, value: "2"}
`,
			err: `PluginPreset org/p: spec.plugin.optionValues[1] (size): value "2" is not of type int`,
		},
		{
			name: "a secret given as a literal",
			preset: `    optionValues:
    - {name: must, value: x}
    - {name: password, value: hunter2}
`,
			err: `PluginPreset org/p: spec.plugin.optionValues[1] (password): value is of type secret: give it by valueFrom.secret`,
		},
		{
			name: "both value and valueFrom",
			preset: `    optionValues:
    - name: must
      value: x
      valueFrom: {secret: {name: s, key: k}}
`,
			err: "PluginPreset org/p: spec.plugin.optionValues[0] (must): more than one of value, valueFrom.secret, valueFrom.ref and expression: give one",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, stderr := templateCase(t, scenario(t, definition, cluster, presetHead+tc.preset, presetPlugin), tc.err)
			if strings.Contains(stderr, "hunter2") {
				t.Error("the error shows a secret's literal")
			}
			if tc.err == "" && !maps.Equal(got, tc.want) {
				t.Errorf("values %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTemplateCommandLine checks the contract's exit codes and outputs.
func TestTemplateCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--from-dir", "testdata/greenhouse"}, 2, `--plugin "": give NAMESPACE/NAME`},
		{[]string{"--plugin", "demo/x"}, 2, "give one of --from-dir and --kubeconfig"},
		{[]string{"--from-dir", "testdata/greenhouse", "--kubeconfig", "k", "--plugin", "demo/x"}, 2, "give one of --from-dir and --kubeconfig"},
		{[]string{"--from-dir", "testdata/greenhouse", "--plugin", "demo/nope"}, 1, "Plugin demo/nope: not found"},
		{[]string{"--from-dir", "testdata/missing", "--plugin", "demo/x"}, 1, "testdata/missing"},
	} {
		code, out, stderr := runTemplate(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, stderr, tc.code, tc.stderr)
		}
	}
	dir := scenario(t, definition, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: org}\n")
	if code, _, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/x"); code != 1 || !strings.Contains(stderr, `b.yaml#1: apiVersion "v1" kind "ConfigMap" is none of the greenhouse.sap/v1alpha1 kinds`) {
		t.Errorf("a manifest of another kind: %d %s", code, stderr)
	}
	// A Secret in the directory is never read.
	dir = scenario(t, definition, cluster, presetHead+"    optionValues: [{name: must, value: x}]\n", presetPlugin,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: org}\ndata: {k: bm90IHJlYWQ=}\n")
	if code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1"); code != 0 || strings.Contains(out, "bm90IHJlYWQ") {
		t.Errorf("with a Secret beside: %d %s %s", code, out, stderr)
	}
}
