package main

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
)

// exprDefinition declares options of each shape expressions and
// references give.
const exprDefinition = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginDefinition
metadata: {name: app, namespace: org}
spec:
  version: "1"
  options:
  - {name: host, type: string, required: false}
  - {name: endpoint, type: string, required: false}
  - {name: endpoints, type: list, required: false}
  - {name: settings, type: map, required: false}
  - {name: url, type: string, required: false}
`

// exprPreset is a preset named name whose values are the YAML list items
// values, for clusters labelled env=prod.
func exprPreset(name, labels, values string) string {
	return `apiVersion: greenhouse.sap/v1alpha1
kind: PluginPreset
metadata: {name: ` + name + `, namespace: org, labels: {` + labels + `}}
spec:
  clusterSelector: {matchLabels: {env: prod}}
  plugin:
    pluginDefinitionRef: {name: app}
    optionValues:
` + values
}

// TestExpressionsAndReferences computes presets' expression values as
// Greenhouse's controller evaluates them, for the Plugin's cluster (its
// name, the organization, the cluster's metadata labels, the DNS domain,
// the owning team), in cluster overrides too, and valueFrom.ref values
// from another preset or Plugins, each with its provenance; a reference
// that closes a cycle, selects nothing, or an expression Greenhouse
// would not evaluate is an error naming the entry.
func TestExpressionsAndReferences(t *testing.T) {
	clusterWithMetadata := `apiVersion: greenhouse.sap/v1alpha1
kind: Cluster
metadata: {name: c1, namespace: org, labels: {env: prod, metadata.greenhouse.sap/region: eu-de-1}}
`
	plugin := func(name, preset string) string {
		return strings.NewReplacer("p-c1", name, "pluginpreset: p", "pluginpreset: "+preset).Replace(presetPlugin)
	}
	for _, tc := range []struct {
		name  string
		docs  []string
		flags []string
		want  map[string]string // values, on success
		from  map[string]string // provenance's from, by option
		err   string
	}{
		{
			name: "an expression over the cluster, the organization, the team and the domain",
			docs: []string{exprPreset("p", "greenhouse.sap/owned-by: team-a", `    - name: host
      expression: '"${global.greenhouse.ownedBy}.${global.greenhouse.clusterName}.${global.greenhouse.organizationName}.${global.greenhouse.baseDomain}"'
    - name: settings
      expression: |
        region: ${global.greenhouse.metadata.region}
        upper: ${global.greenhouse.metadata.region.upperAscii()}
`)},
			flags: []string{"--dns-domain", "example.com"},
			want:  map[string]string{"host": `"team-a.c1.org.example.com"`, "settings": `{"region":"eu-de-1","upper":"EU-DE-1"}`},
			from:  map[string]string{"host": `expression "${global.greenhouse.ownedBy}.${global.greenhouse.clusterName}.${global.greenhouse.organizationName}.${global.greenhouse.baseDomain}"`},
		},
		{
			name: "an expression in the cluster's override, over a literal",
			docs: []string{exprPreset("p", "", "    - {name: host, value: plain}\n") + `  clusterOptionOverrides:
  - clusterName: c1
    overrides:
    - {name: host, expression: 'h-${global.greenhouse.clusterName}'}
`},
			want: map[string]string{"host": `"h-c1"`},
			from: map[string]string{"host": "expression h-${global.greenhouse.clusterName}"},
		},
		{
			name: "the domain not given",
			docs: []string{exprPreset("p", "", "    - {name: host, expression: 'x.${global.greenhouse.baseDomain}'}\n")},
			err:  "PluginPreset org/p: spec.plugin.optionValues[0] (host): expression: ${global.greenhouse.baseDomain}: no such key: baseDomain (global.greenhouse.baseDomain is Greenhouse's --dns-domain: give it)",
		},
		{
			name:  "expressions off, as Greenhouse ships",
			docs:  []string{exprPreset("p", "", "    - {name: host, expression: 'x'}\n")},
			flags: []string{"--expressions=false"},
			err:   "PluginPreset org/p: spec.plugin.optionValues[0] (host): expression: not evaluated: Greenhouse evaluates none here (pluginPreset.expressionEvaluationEnabled is off)",
		},
		{
			name: "a reference to another preset's value, itself an expression for this cluster",
			docs: []string{
				exprPreset("p", "", "    - name: endpoint\n      valueFrom: {ref: {name: q, expression: 'object.spec.plugin.optionValues.filter(v, v.name == \"url\")[0].value'}}\n"),
				exprPreset("q", "", "    - {name: url, expression: 'https://q.${global.greenhouse.clusterName}'}\n"),
			},
			want: map[string]string{"endpoint": `"https://q.c1"`},
			from: map[string]string{"endpoint": `ref PluginPreset org/q: object.spec.plugin.optionValues.filter(v, v.name == "url")[0].value`},
		},
		{
			name: "a reference to Plugins by selector: a list, by name, of their effective values",
			docs: []string{
				exprPreset("p", "", "    - name: endpoints\n      valueFrom: {ref: {kind: Plugin, selector: {matchLabels: {greenhouse.sap/pluginpreset: q}}, expression: 'object.spec.optionValues.filter(v, v.name == \"url\")[0].value'}}\n"),
				exprPreset("q", "", "    - {name: url, value: from-q}\n"),
				plugin("q-c1", "q"), plugin("q-c2", "q"),
				strings.Replace(cluster, "c1", "c2", 1),
			},
			want: map[string]string{"endpoints": `["from-q","from-q"]`},
			from: map[string]string{"endpoints": `ref Plugin org/q-c1, org/q-c2: object.spec.optionValues.filter(v, v.name == "url")[0].value`},
		},
		{
			name: "a cycle of references",
			docs: []string{
				exprPreset("p", "", "    - name: endpoint\n      valueFrom: {ref: {name: q, expression: 'object.metadata.name'}}\n"),
				exprPreset("q", "", "    - name: url\n      valueFrom: {ref: {name: p, expression: 'object.metadata.name'}}\n"),
			},
			err: "valueFrom.ref makes a cycle: PluginPreset org/p → PluginPreset org/q → PluginPreset org/p",
		},
		{
			name: "a reference to a Plugin that refers back",
			docs: []string{
				exprPreset("p", "", "    - name: endpoint\n      valueFrom: {ref: {kind: Plugin, name: p-c1, expression: 'object.metadata.name'}}\n"),
			},
			err: "valueFrom.ref makes a cycle: Plugin org/p-c1 → PluginPreset org/p → Plugin org/p-c1",
		},
		{
			name: "a selector that selects nothing",
			docs: []string{exprPreset("p", "", "    - name: endpoints\n      valueFrom: {ref: {selector: {matchLabels: {team: none}}, expression: 'object.metadata.name'}}\n")},
			err:  "PluginPreset org/p: spec.plugin.optionValues[0] (endpoints): valueFrom.ref: selector team=none selects no PluginPreset in org",
		},
		{
			name: "both name and selector",
			docs: []string{exprPreset("p", "", "    - name: endpoint\n      valueFrom: {ref: {name: q, selector: {}, expression: 'object.metadata.name'}}\n")},
			err:  "PluginPreset org/p: spec.plugin.optionValues[0] (endpoint): valueFrom.ref: give one of name and selector",
		},
		{
			name: "an expression of the wrong type for its option",
			docs: []string{exprPreset("p", "", "    - {name: host, expression: '${size(global.greenhouse.clusterName)}'}\n")},
			err:  `PluginPreset org/p: spec.plugin.optionValues[0] (host): value 2 is not of type string`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res, _ := templateCase(t, scenario(t, append([]string{exprDefinition, clusterWithMetadata, presetPlugin}, tc.docs...)...), tc.err, tc.flags...)
			if tc.err != "" {
				return
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("values %v, want %v", got, tc.want)
			}
			for option, from := range tc.from {
				if vs := res.Provenance[option]; vs.From != from || !strings.HasPrefix(vs.Source, "PluginPreset org/p") {
					t.Errorf("provenance of %s: %+v, want from %q", option, vs, from)
				}
			}
		})
	}
}

// TestReferencesBounded: presets in five layers of five, each referring
// by a selector to every preset of the next layer, would take 5^5
// resolutions for one Plugin; a computation stops at a bound, naming it.
func TestReferencesBounded(t *testing.T) {
	docs := []string{exprDefinition, cluster, presetPlugin,
		exprPreset("p", "", "    - name: endpoints\n      valueFrom: {ref: {selector: {matchLabels: {layer: \"0\"}}, expression: 'object.metadata.name'}}\n")}
	for layer := range 5 {
		for i := range 5 {
			value := "    - {name: url, value: x}\n"
			if layer < 4 {
				value = "    - name: endpoints\n      valueFrom: {ref: {selector: {matchLabels: {layer: \"" + strconv.Itoa(layer+1) + "\"}}, expression: 'object.metadata.name'}}\n"
			}
			docs = append(docs, exprPreset(fmt.Sprintf("l%d-%d", layer, i), fmt.Sprintf("layer: \"%d\"", layer), value))
		}
	}
	code, _, stderr := runTemplate(t, "--from-dir", scenario(t, docs...), "--plugin", "org/p-c1")
	if want := "valueFrom.ref: more than 1000 objects resolved for one Plugin"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, %s; want 1 and %q", code, stderr, want)
	}
}

// TestExpressionsTestdata runs docs/OVERRIDES.md's command on
// testdata/expressions.
func TestExpressionsTestdata(t *testing.T) {
	code, out, stderr := runTemplate(t, "--from-dir", "testdata/expressions", "--plugin", "org/dashboards-eu-de-1", "--dns-domain", "example.com")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, res := values(t, out)
	want := map[string]string{
		"ingress.host":     `"dashboards.eu-de-1.example.com"`,
		"labels":           `{"region":"EU-DE-1","team":"observability"}`,
		"thanos.endpoints": `["thanos-grpc.eu-de-1.example.com:443"]`,
	}
	if !maps.Equal(got, want) {
		t.Errorf("values %v, want %v", got, want)
	}
	if from := res.Provenance["thanos.endpoints"].From; !strings.HasPrefix(from, "ref PluginPreset org/thanos: ") {
		t.Errorf("thanos.endpoints from %q", from)
	}
}
