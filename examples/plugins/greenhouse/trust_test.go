package greenhouse

import (
	"fmt"
	"strings"
	"testing"
)

// trustSet is a Set of the manifests docs.
func trustSet(t *testing.T, docs ...string) *Set {
	t.Helper()
	s := NewSet()
	for _, d := range docs {
		if _, err := s.AddManifest([]byte(d)); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
	}
	return s
}

const (
	trustDefinition = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginDefinition
metadata: {name: app, namespace: org}
spec:
  version: "1"
  options:
  - {name: cfg, type: map, required: false}
  - {name: sizes, type: list, required: false}
`
	trustCluster = `apiVersion: greenhouse.sap/v1alpha1
kind: Cluster
metadata: {name: c1, namespace: org, labels: {env: prod}}
`
	trustPlugin = `apiVersion: greenhouse.sap/v1alpha1
kind: Plugin
metadata: {name: p-c1, namespace: org}
spec:
  pluginDefinitionRef: {name: app}
  clusterName: c1
`
)

// TestContestedLiteralIsNoReference: a value is a reference only where its
// own layer's producer wrote one (docs/SECURITY.md), a losing value in a
// contest included: when the winning override gives an option by
// valueFrom.secret, a losing literal of a reference's shape is shown as
// the literal it is.
func TestContestedLiteralIsNoReference(t *testing.T) {
	over := func(name, created, item string) string {
		return `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: ` + name + `, namespace: org, creationTimestamp: "` + created + `"}
spec:
  pluginDefinitionNames: [app]
  overrides:
  - ` + item + "\n"
	}
	s := trustSet(t, trustDefinition, trustCluster, trustPlugin,
		over("tenant", "2026-01-01T00:00:00Z", `{name: cfg, value: {"$ref": "secret kube-system/admin-token#token"}}`),
		over("operator", "2026-01-02T00:00:00Z", `{name: cfg, valueFrom: {secret: {name: api, key: token}}}`))
	res, err := Effective(s, "org", "p-c1", Settings{})
	if err != nil {
		t.Fatal(err)
	}
	vs := res.Provenance["cfg"]
	if vs.Source != "PluginOverride org/operator" || len(vs.Contested) != 1 {
		t.Fatalf("provenance %+v: want org/operator winning a contest with org/tenant", vs)
	}
	c := vs.Contested[0]
	if c.ValueFrom != nil {
		t.Errorf("the literal of PluginOverride org/tenant is shown as a Secret reference: %s", c.describe())
	}
	if c.Value == nil || !strings.Contains(string(*c.Value), "kube-system/admin-token") {
		t.Errorf("contested value %+v: want the literal as written", c)
	}
	lines, _ := ContestLines(res)
	for _, l := range lines {
		if strings.Contains(l, "which gives secret admin-token#token") {
			t.Errorf("the contest line names a Secret no layer referred to: %s", l)
		}
	}
}

// TestRefCostBoundedPerComputation: maxCost bounds every expression of
// one computation together, a valueFrom.ref's over each object its
// selector picks included, not each evaluation alone: tenants write them,
// and the mutating webhook waits for them.
func TestRefCostBoundedPerComputation(t *testing.T) {
	was := maxCost
	t.Cleanup(func() { maxCost = was })
	const expr = `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20].map(x, [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20].map(y, [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20].filter(z, z > x + y))).size()`
	// What the expression costs over one object.
	env, err := objectEnv()
	if err != nil {
		t.Fatal(err)
	}
	_, cost, err := evaluate(env, expr, map[string]any{"object": map[string]any{}}, 1<<40)
	if err != nil || cost == 0 {
		t.Fatalf("cost %d: %v", cost, err)
	}
	maxCost = 2 * cost // each object's evaluation passes the bound alone
	const n = 10       // all of them together cost five times the bound
	docs := []string{trustDefinition, trustCluster, `apiVersion: greenhouse.sap/v1alpha1
kind: Plugin
metadata: {name: p-c1, namespace: org, labels: {greenhouse.sap/pluginpreset: p}}
spec:
  pluginDefinitionRef: {name: app}
  clusterName: c1
`, `apiVersion: greenhouse.sap/v1alpha1
kind: PluginPreset
metadata: {name: p, namespace: org}
spec:
  clusterSelector: {matchLabels: {env: prod}}
  plugin:
    pluginDefinitionRef: {name: app}
    optionValues:
    - name: sizes
      valueFrom:
        ref:
          kind: PluginPreset
          selector: {matchLabels: {feed: "yes"}}
          expression: "` + expr + `"
`}
	for i := range n {
		docs = append(docs, fmt.Sprintf(`apiVersion: greenhouse.sap/v1alpha1
kind: PluginPreset
metadata: {name: src-%d, namespace: org, labels: {feed: "yes"}}
spec:
  clusterSelector: {matchLabels: {env: prod}}
  plugin:
    pluginDefinitionRef: {name: app}
    optionValues: [{name: sizes, value: [%d]}]
`, i, i))
	}
	res, err := Effective(trustSet(t, docs...), "org", "p-c1", Settings{})
	if err == nil {
		t.Errorf("one reference evaluated %d times at a cost of %d each (%d in all) against a bound of %d, and passed: %s = %v",
			n, cost, n*cost, maxCost, res.Provenance["sizes"].From, res.OptionValues)
	}
}
