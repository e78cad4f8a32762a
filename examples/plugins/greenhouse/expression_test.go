package greenhouse

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEvaluateExpression holds EvaluateExpression to what Greenhouse's
// own evaluator gives for the cases its tests and docs show: placeholders
// in strings, lists and nested maps, cel-go's string extensions, a
// document without placeholders read as YAML, and the errors.
func TestEvaluateExpression(t *testing.T) {
	lowCost(t)
	data := TemplateData("my-org", map[string]string{LabelOwnedBy: "team-1"},
		&Cluster{ObjectMeta: metav1.ObjectMeta{Name: "obs-eu-de-1", Labels: map[string]string{
			LabelMetadataPrefix + "region": "eu-de-1", LabelMetadataPrefix + "environment": "production", "other": "x"}}},
		Settings{DNSDomain: "greenhouse.example.com"})
	for _, tc := range []struct {
		expression string
		want       string // JSON, or the error's text with a leading "error: "
	}{
		{"username: prometheus-${global.greenhouse.metadata.region}-thanos", `{"username":"prometheus-eu-de-1-thanos"}`},
		{"name: static-value\nport: 8080\nenabled: true\n", `{"enabled":true,"name":"static-value","port":8080}`},
		{"- thanos-grpc.obs.${global.greenhouse.metadata.region}.cloudoperators.dev:443\n- thanos-grpc.mon.${global.greenhouse.metadata.region}.cloudoperators.dev:443\n",
			`["thanos-grpc.obs.eu-de-1.cloudoperators.dev:443","thanos-grpc.mon.eu-de-1.cloudoperators.dev:443"]`},
		{"swift:\n  region_name: ${global.greenhouse.metadata.region}\ndatabase:\n  host: db-${global.greenhouse.metadata.region}.x\n  port: 5432\n",
			`{"database":{"host":"db-eu-de-1.x","port":5432},"swift":{"region_name":"eu-de-1"}}`},
		{"uppercase: ${global.greenhouse.clusterName.upperAscii()}\ntransformed: ${global.greenhouse.clusterName.split('-').join('_')}\n",
			`{"transformed":"obs_eu_de_1","uppercase":"OBS-EU-DE-1"}`},
		{`"myapp.${global.greenhouse.clusterName}.example.com"`, `"myapp.obs-eu-de-1.example.com"`},
		{`"${global.greenhouse.clusterName}-${global.greenhouse.organizationName}"`, `"obs-eu-de-1-my-org"`},
		{`"${global.greenhouse.ownedBy}@${global.greenhouse.baseDomain}"`, `"team-1@greenhouse.example.com"`},
		{"replicas: ${size(global.greenhouse.metadata)}", `{"replicas":2}`},
		{"labels: ${global.greenhouse.metadata}", `{"labels":{"environment":"production","region":"eu-de-1"}}`},
		{"", "error: the expression is empty"},
		{"value: ${global.nonexistent.field}", "error: ${global.nonexistent.field}: no such key: nonexistent"},
		{"{name: value, list: [item1, item2", "error: yaml"},
		{"${[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, [0,1,2,3,4,5,6,7,8,9].map(d, [0,1,2,3,4,5,6,7,8,9].map(e, a+b+c+d+e)))))}", "error: cost limit exceeded"},
	} {
		got, err := EvaluateExpression(tc.expression, data)
		if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %s, %v; want an error saying %q", tc.expression, got, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.expression, err)
			continue
		}
		var g, w any
		json.Unmarshal(got, &g)
		json.Unmarshal([]byte(tc.want), &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%q: %s, want %s", tc.expression, got, tc.want)
		}
	}
}

// TestTemplateData: no baseDomain when the DNS domain is not known, no
// ownedBy without the label, and a label's dotted key nests.
func TestTemplateData(t *testing.T) {
	got := TemplateData("org", nil, &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{LabelMetadataPrefix + "cloud.provider": "x"}}}, Settings{})
	want := map[string]any{"global": map[string]any{"greenhouse": map[string]any{"organizationName": "org", "clusterName": "c",
		"metadata": map[string]any{"cloud": map[string]any{"provider": "x"}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// FuzzEvaluateExpression: an expression, hostile input a tenant writes in
// a preset, evaluates or fails, never panics.
func FuzzEvaluateExpression(f *testing.F) {
	for _, s := range []string{"a: ${global.greenhouse.clusterName}", "${1/0}", "${'x'.repeat(3)}", "${[1,2]}: ${{'a': 1}}", "- ${", "${global}"} {
		f.Add(s)
	}
	data := TemplateData("org", nil, &Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, Settings{})
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<10 {
			return
		}
		out, err := EvaluateExpression(s, data)
		if err == nil && !json.Valid(out) {
			t.Errorf("%q gives %q, not JSON", s, out)
		}
	})
}

// lowCost lowers the cost bound for a test, so that what passes it is
// quick to evaluate.
func lowCost(t *testing.T) {
	was := maxCost
	maxCost = 200_000
	t.Cleanup(func() { maxCost = was })
}

// TestExpressionBounds: an expression's placeholders together cost at
// most the bound; and the document they make is bounded.
func TestExpressionBounds(t *testing.T) {
	lowCost(t)
	data := TemplateData("org", nil, nil, Settings{})
	hundred := "[" + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + "]"
	square := "${" + hundred + ".map(a, " + hundred + ".map(b, a + b))}"
	// One placeholder, repeated: its first evaluation puts its text in
	// each place, and the document passes its bound.
	if _, err := EvaluateExpression(strings.Repeat("- "+square+"\n", 60), data); err == nil || !strings.Contains(err.Error(), "the document the placeholders make is over 1048576 bytes") {
		t.Errorf("a document past the bound: %v", err)
	}
	// Distinct placeholders that each stay under the bound, and together
	// pass it.
	twenty := "[" + strings.TrimSuffix(strings.Repeat("0,", 20), ",") + "]"
	heavy := func(i int) string {
		return fmt.Sprintf("${size(%s.map(a, %s.map(b, %s.map(c, a + b + c + %d))))}", twenty, twenty, twenty, i)
	}
	var doc strings.Builder
	for i := range 20 {
		doc.WriteString("- " + heavy(i) + "\n")
	}
	if _, err := EvaluateExpression(heavy(0), data); err != nil {
		t.Fatalf("one heavy placeholder: %v", err)
	}
	if _, err := EvaluateExpression(doc.String(), data); err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Errorf("twenty heavy placeholders: %v", err)
	}
}

// TestPlaceholdersCountAgainstTheBudget: a placeholder costs, besides
// what cel-go counts of its evaluation (nothing for a literal), its
// compiling and the document it is replaced through, so that thousands of
// literal placeholders over a large document cannot hold a computation.
func TestPlaceholdersCountAgainstTheBudget(t *testing.T) {
	was := maxCost
	t.Cleanup(func() { maxCost = was })
	maxCost = 1000
	var b strings.Builder
	b.WriteString("- " + strings.Repeat("x", 100_000) + "\n")
	const n = 3000
	for i := range n {
		fmt.Fprintf(&b, "- ${%d}\n", i)
	}
	data := TemplateData("org", nil, nil, Settings{})
	budget := maxCost
	out, err := evaluateExpression(b.String(), data, &budget)
	if err == nil {
		t.Errorf("an expression of %d distinct placeholders over a %d-byte document passed a budget of %d, charged %d: %d bytes out",
			n, b.Len(), maxCost, maxCost-budget, len(out))
	}
}

// TestRepeatedPlaceholderAsGreenhouse: as Greenhouse's pkg/cel
// EvaluateExpression does, every placeholder is evaluated in the order
// found, a repeated one again, each replacing every occurrence in the
// document as it stands, so that a later one also replaces placeholder
// text an earlier value wrote. Greenhouse v0.16.0's own code gives this
// document {"a":"c1","b":"c1","c":"c1"}.
func TestRepeatedPlaceholderAsGreenhouse(t *testing.T) {
	data := map[string]any{"global": map[string]any{"greenhouse": map[string]any{"clusterName": "c1", "organizationName": "org"}}}
	const expr = "a: ${global.greenhouse.clusterName}\n" +
		"b: ${'$\\x7bglobal.greenhouse.clusterName\\x7d'}\n" +
		"c: ${global.greenhouse.clusterName}"
	out, err := EvaluateExpression(expr, data)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"c1","b":"c1","c":"c1"}`; string(out) != want {
		t.Errorf("%s gives %s; Greenhouse's controller gives %s", expr, out, want)
	}
}
