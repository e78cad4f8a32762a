package bench

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/merge"
)

// gatesDoc is a component file with n feature gates: the document whose
// flatten the library's own benchmark times.
func gatesDoc(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"apiVersion":"v1","featureGates":{`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"G%06d":true`, i)
	}
	sb.WriteString(`}}`)
	return []byte(sb.String())
}

// componentDoc is bench/testdata/component.yaml as JSON.
func componentDoc(t testing.TB) []byte {
	doc, err := yaml.YAMLToJSON(readTestdata(t, "component.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestJSONTextFlatten holds the jsontext flatten to merge.Flatten, so
// that the benchmark compares the same work.
func TestJSONTextFlatten(t *testing.T) {
	docs := []string{
		string(componentDoc(t)),
		string(gatesDoc(10)),
		`{}`,
		`{"a":{},"b":{"c":{}},"d":null}`,
		`{"a":[1, 2, {"x" : 1}],"b":"s\u00e9\"q","c":1.50e+3,"d":true}`,
		`{"ref":{"$ref":"secret:ns/name/key"},"notref":{"$ref":"x","y":1},"n":{"$ref":1}}`,
		`{"a/b":{"c~d":"e"},"":{"":1}}`,
		` { "a" : { "b" : [ ] } } `,
	}
	for _, doc := range docs {
		want, err := merge.Flatten([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		got, err := JSONTextFlatten([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s:\njsontext %v\nstrata   %v", doc, got, want)
		}
	}
	for _, bad := range []string{`[]`, `{"a":1,"a":2}`, `{"a":1} x`, `{"a":}`, "{\"a\":\"\xff\"}"} {
		if _, err := JSONTextFlatten([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// BenchmarkJSONFlatten compares strata's flatten (merge.Flatten, its own
// scanner) with one over jsontext's decoder, on a component file and on
// 250,000 feature gates: run it with GOTOOLCHAIN=local (Go 1.26),
// GOTOOLCHAIN=go1.27.3, and GOTOOLCHAIN=go1.27.3 GOEXPERIMENT=nojsonv2.
func BenchmarkJSONFlatten(b *testing.B) {
	for _, d := range []struct {
		name string
		doc  []byte
	}{{"component", componentDoc(b)}, {"gates", gatesDoc(250_000)}} {
		for _, f := range []struct {
			name string
			fn   func([]byte) (map[string]string, error)
		}{{"strata", merge.Flatten}, {"jsontext", JSONTextFlatten}} {
			b.Run(d.name+"/"+f.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := f.fn(d.doc); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
