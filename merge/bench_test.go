package merge

import (
	"fmt"
	"testing"
)

// benchLayers builds the workload the precedence goal is stated on: four
// layers (defaults, cluster file, drop-in, flags) over a 30-key config of
// 10 booleans, 10 integers, 5 durations and 5 strings. The file sets every
// key; the drop-in and the flags set a few.
func benchLayers() []*Layer {
	full := map[string]string{}
	for i := range 10 {
		full[fmt.Sprintf("/bool%d", i)] = "true"
		full[fmt.Sprintf("/int%d", i)] = fmt.Sprint(i * 10)
	}
	for i := range 5 {
		full[fmt.Sprintf("/duration%d", i)] = `"1m"`
		full[fmt.Sprintf("/string%d", i)] = `"value"`
	}
	defaults := map[string]string{}
	for k, v := range full {
		defaults[k] = v
	}
	return []*Layer{
		{Source: Source{Origin: "default"}, Values: defaults},
		{Source: Source{Origin: "file", Name: "/etc/component/config.yaml"}, Values: full},
		{Source: Source{Origin: "drop-in", Name: "/etc/component/config.d/10.yaml"}, Values: map[string]string{
			"/bool1": "false", "/int1": "0", "/duration1": `"5s"`, "/string1": `"other"`, "/bool2": "false",
		}},
		{Source: Source{Origin: "flag", Name: "--flags"}, Values: map[string]string{"/int2": "7", "/bool3": "false"}},
	}
}

// BenchmarkOverlay is the baseline: the same four layers overlaid into a
// plain map[string]string, with no provenance and no policy.
func BenchmarkOverlay(b *testing.B) {
	layers := benchLayers()
	b.ReportAllocs()
	for b.Loop() {
		out := make(map[string]string)
		for _, l := range layers {
			for k, v := range l.Values {
				out[k] = v
			}
		}
		if len(out) != 30 {
			b.Fatal(len(out))
		}
	}
}

// BenchmarkMerge merges the same four layers with provenance. The goal:
// at most 1.5 times BenchmarkOverlay in the same run.
func BenchmarkMerge(b *testing.B) {
	layers := benchLayers()
	b.ReportAllocs()
	for b.Loop() {
		r := Merge(layers...)
		if r.size() != 30 {
			b.Fatal(r.size())
		}
	}
}

// BenchmarkExplain measures asking for the provenance of one key.
func BenchmarkExplain(b *testing.B) {
	r := Merge(benchLayers()...)
	b.ReportAllocs()
	for b.Loop() {
		if p, _ := r.Explain("/int2"); p.Source.Origin != "flag" {
			b.Fatal(p)
		}
	}
}
