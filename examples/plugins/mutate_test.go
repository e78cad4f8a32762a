package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

// admitted runs the mutating webhook over plugin (JSON), written to
// namespace org with objs, and returns the Plugin as the API server
// stores it once the patch is applied, and the warning.
func admitted(t *testing.T, objs greenhouse.Objects, plugin []byte) ([]byte, string) {
	t.Helper()
	m := &mutator{objs: objs, log: klog.Background(), admitted: metrics.NewCounterVec(&metrics.CounterOpts{Name: "t"}, []string{"result"})}
	ops, warning, _ := m.mutate("org", plugin)
	if len(ops) == 0 {
		return plugin, warning
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(plugin)
	if err != nil {
		t.Fatalf("the patch %s does not apply: %v", raw, err)
	}
	// Admitted again, a stored Plugin is left as it is.
	if again, _, _ := m.mutate("org", out); len(again) != 0 {
		t.Errorf("admitting %s again patches it: %v", out, again)
	}
	return out, warning
}

// stored decodes a stored Plugin: its values (JSON, or "secret NAME#KEY"),
// in order, and the overrides its annotation says applied.
func stored(t *testing.T, raw []byte) ([]string, string) {
	t.Helper()
	var p greenhouse.Plugin
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range p.Spec.OptionValues {
		if v.ValueFrom != nil {
			out = append(out, v.Name+"=secret "+v.ValueFrom.Secret.Name+"#"+v.ValueFrom.Secret.Key)
			continue
		}
		out = append(out, v.Name+"="+string(*v.Value))
	}
	return out, p.Annotations[greenhouse.AnnotationAppliedOverrides]
}

// written is a Plugin as a writer sends it: the preset's Plugin on c1 with
// values (YAML list items) and the annotations of prev, a stored Plugin
// (nil: none), as Greenhouse's controller keeps what it read.
func written(t *testing.T, prev []byte, items string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(presetPlugin + "  optionValues:\n" + items))
	if err != nil {
		t.Fatal(err)
	}
	if prev == nil {
		return j
	}
	var p, from map[string]any
	json.Unmarshal(j, &p)
	json.Unmarshal(prev, &from)
	if a, ok := from["metadata"].(map[string]any)["annotations"]; ok {
		p["metadata"].(map[string]any)["annotations"] = a
	}
	out, _ := json.Marshal(p)
	return out
}

func objects(t *testing.T, docs ...string) *greenhouse.Set {
	t.Helper()
	set, err := greenhouse.ReadDir(scenario(t, docs...))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestMutatingWebhook layers the PluginOverrides over what a Plugin's
// writer gives, and tells the writer's values from its own on the next
// write: the writer's value comes back when the override goes, a value
// the writer changes under an override is the new one to come back, an
// option the writer drops stays the override's, and values the webhook
// does not decide stay as and where the writer put them.
func TestMutatingWebhook(t *testing.T) {
	def := strings.Replace(definition, "  - {name: must, type: string, required: true}\n",
		"  - {name: must, type: string, required: false}\n  - {name: resources, type: map, default: {cpu: \"1\"}, required: false}\n", 1)
	withOverrides := objects(t, def, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n  - {name: token, value: from-override}\n  - {name: resources, path: /memory, value: 1Gi}\n"))
	without := objects(t, def, cluster, presetPlugin)

	// Greenhouse writes the preset's values, with its own
	// global.greenhouse.* value the definition does not declare.
	first, warning := admitted(t, withOverrides, written(t, nil, "  - {name: global.greenhouse.clusterName, value: c1}\n  - {name: size, value: 2}\n  - {name: must, value: x}\n"))
	vals, applied := stored(t, first)
	if want := []string{`global.greenhouse.clusterName="c1"`, "size=5", `must="x"`, `resources={"cpu":"1","memory":"1Gi"}`, `token="from-override"`}; warning != "" || !slices.Equal(vals, want) || applied != "PluginOverride org/o" {
		t.Fatalf("first write: %v %q %q, want %v", vals, applied, warning, want)
	}

	// Greenhouse writes the same again: stored as it is.
	again, _ := admitted(t, withOverrides, written(t, first, "  - {name: global.greenhouse.clusterName, value: c1}\n  - {name: size, value: 2}\n  - {name: must, value: x}\n"))
	if string(again) != string(first) {
		t.Errorf("the same write stores\n%s\nnot\n%s", again, first)
	}

	// Admitted again with the override gone (an empty patch, as `plugins
	// run` sends): the writer's size comes back, what the override added
	// goes.
	gone, _ := admitted(t, without, first)
	if vals, applied := stored(t, gone); !slices.Equal(vals, []string{`global.greenhouse.clusterName="c1"`, "size=2", `must="x"`}) || applied != "" {
		t.Errorf("the override gone: %v %q", vals, applied)
	}
	var p greenhouse.Plugin
	json.Unmarshal(gone, &p)
	if _, ok := p.Annotations[greenhouse.AnnotationWritten]; ok {
		t.Errorf("nothing written over the writer's, and the record is kept: %v", p.Annotations)
	}

	// The preset's size changes under the override, and Greenhouse drops
	// must: the override still wins, and the new size is the one to come
	// back.
	changed, _ := admitted(t, withOverrides, written(t, first, "  - {name: size, value: 3}\n  - {name: global.greenhouse.clusterName, value: c1}\n"))
	if vals, _ := stored(t, changed); !slices.Equal(vals, []string{"size=5", `global.greenhouse.clusterName="c1"`, `resources={"cpu":"1","memory":"1Gi"}`, `token="from-override"`}) {
		t.Errorf("a changed write: %v", vals)
	}
	back, _ := admitted(t, without, changed)
	if vals, _ := stored(t, back); !slices.Equal(vals, []string{"size=3", `global.greenhouse.clusterName="c1"`}) {
		t.Errorf("the override gone after a changed write: %v", vals)
	}

	// A user sets the overridden value by hand: it is the writer's now,
	// and the override still wins.
	var hand map[string]any
	json.Unmarshal(first, &hand)
	hand["spec"].(map[string]any)["optionValues"].([]any)[1] = map[string]any{"name": "size", "value": 7}
	byHand, _ := json.Marshal(hand)
	stillFive, _ := admitted(t, withOverrides, byHand)
	if vals, _ := stored(t, stillFive); vals[1] != "size=5" {
		t.Errorf("by hand: %v", vals)
	}
	if vals, _ := stored(t, must(admitted(t, without, stillFive))); vals[1] != "size=7" {
		t.Errorf("by hand, then the override gone: %v", vals)
	}

	// A record that does not decode is no record: the values are all the
	// writer's.
	var forged map[string]any
	json.Unmarshal(first, &forged)
	forged["metadata"].(map[string]any)["annotations"].(map[string]any)[greenhouse.AnnotationWritten] = "{not json"
	raw, _ := json.Marshal(forged)
	if vals, _ := stored(t, must(admitted(t, without, raw))); !slices.Contains(vals, `token="from-override"`) {
		t.Errorf("a forged record undid values: %v", vals)
	}

	// A value of the writer's that strata refuses: the overrides still
	// apply, and a value none decides is kept as written, for Greenhouse
	// to judge, with a warning that names it. A writer cannot turn the
	// overrides off.
	bad := written(t, nil, "  - {name: size, value: two}\n")
	const why = `Plugin org/p-c1: spec.optionValues[0] (size): value "two" is not of type int`
	out, warning := admitted(t, withOverrides, bad)
	if vals, applied := stored(t, out); !slices.Contains(vals, "size=5") || !slices.Contains(vals, `token="from-override"`) || applied != "PluginOverride org/o" || !strings.Contains(warning, why) {
		t.Errorf("an invalid write: stored %v, applied %q, warning %q; want the overrides applied and the value named", vals, applied, warning)
	}
	if out, warning := admitted(t, without, bad); string(out) != string(bad) || !strings.Contains(warning, why) {
		t.Errorf("an invalid write, no override: %s, %q; want it as written, and the value named", out, warning)
	}

	// An override's value the definition does not take (of the wrong
	// type) is not applied: the Plugin keeps its own, with a warning that
	// names the override and the problem.
	broken := objects(t, def, cluster, presetPlugin, override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: two}\n"))
	good := written(t, nil, "  - {name: size, value: 2}\n")
	out, warning = admitted(t, broken, good)
	if string(out) != string(good) || !strings.Contains(warning, `PluginOverride org/o: spec.overrides[0] (size): value "two" is not of type int`) {
		t.Errorf("a broken override: %s, %q", out, warning)
	}
}

func must(b []byte, _ string) []byte { return b }
