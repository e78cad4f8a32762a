package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// slowFlatten is Flatten without the scan: the reading of encoding/json.
func (l Lists) slowFlatten(doc []byte) (map[string]string, error) {
	if err := checkKeys(doc); err != nil {
		return nil, err
	}
	out := map[string]string{}
	return out, l.flattenInto(out, "", doc)
}

// FuzzFlattenScan checks the one-pass flattener against encoding/json's
// reading: whatever it flattens, the slow way flattens alike, and what
// the slow way refuses it never flattens.
func FuzzFlattenScan(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":{"b":[1,2,{"c":"d"}]},"e":null}`, ` { "a" : 1.5e-3 , "b" : "x y" } `,
		`{"a":1,"a":2}`, `{"a":{},"a":{}}`, `{"a":{"x":1},"a":2}`, `{"k\u0061":1,"ka":2}`, `{"a/b~c":true}`,
		`{"l":[{"k":"a","v":1},{"k":"b"}],"m":{"l":[]}}`, `{"l":[{"k":"a"},{"k":"a"}]}`, `{"l":{"k":"a"}}`, `{"l":null}`,
		`{"a":01}`, `{"a":-}`, `{"a":"\x"}`, `{"a":tru}`, `{"a":[1,2}`, `{"a":1}x`, "{\"a\":\"\x01\"}", `{"a":[{"y":1,"y":2}]}`,
		`{"é":"ü","\u00e9x":"\ud800"}`, `{"p":{"$ref":"secret a/b#c"},"q":{ "$ref" : "x"},"r":{"$ref":"x","y":1}}`,
		strings.Repeat(`{"a":`, 150) + "1" + strings.Repeat("}", 150),
	} {
		f.Add([]byte(s))
	}
	lists := Lists{"/l": "k", "/*/l": "k"}
	f.Fuzz(func(t *testing.T, doc []byte) {
		fast, err := lists.flattenScan(doc)
		slow, slowErr := lists.slowFlatten(doc)
		if err != nil {
			return
		}
		if slowErr != nil {
			t.Fatalf("%q: scanned to %v, but the slow way says %v", doc, fast, slowErr)
		}
		if !maps.Equal(fast, slow) {
			t.Fatalf("%q:\nscan %v\nslow %v", doc, fast, slow)
		}
	})
}

// BenchmarkFlattenGates flattens a map of 250,000 feature gates.
func BenchmarkFlattenGates(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"apiVersion":"v1","featureGates":{`)
	for i := range 250_000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"G%06d":true`, i)
	}
	sb.WriteString(`}}`)
	doc := []byte(sb.String())
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := Flatten(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("slow", func(b *testing.B) {
		for b.Loop() {
			if _, err := Lists(nil).slowFlatten(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// treeUnflatten is Unflatten the plain way: a tree of maps, encoded by
// encoding/json.
func treeUnflatten(values map[string]string) ([]byte, error) {
	root := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if values[k] == Tombstone {
			continue
		}
		segs, _ := Segments(k)
		node := root
		for _, s := range segs[:len(segs)-1] {
			child, ok := node[s].(map[string]any)
			if !ok {
				child = map[string]any{}
				node[s] = child
			}
			node = child
		}
		node[segs[len(segs)-1]] = json.RawMessage(values[k])
	}
	out, err := marshal(root)
	return []byte(out), err
}

// FuzzUnflatten checks the one-pass Unflatten against encoding/json's
// writing of the same tree, byte for byte, on the leaves of any document.
func FuzzUnflatten(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":{"b":[1, 2,{"c":"d"}]},"e":null,"a.b":{"x":"<&>"}}`, `{"a/b~c":true,"é\u2028":"ü","\u0001":1}`,
		`{"b":{"y":1,"x":{"z":2}},"a":{},"c":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		values, err := Lists(nil).slowFlatten(doc)
		if err != nil {
			return
		}
		got, err := Unflatten(values)
		want, werr := treeUnflatten(values)
		if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%v:\none pass %s (%v)\ntree     %s (%v)", values, got, err, want, werr)
		}
	})
}

func BenchmarkUnflattenGates(b *testing.B) {
	values := map[string]string{}
	for i := range 250_000 {
		values[fmt.Sprintf("/featureGates/G%06d", i)] = "true"
	}
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			if _, err := Unflatten(values); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tree", func(b *testing.B) {
		for b.Loop() {
			if _, err := treeUnflatten(values); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestFlattenDeep flattens documents nested deeper than the scan reads,
// and deeper than encoding/json does: refused, in memory linear in the
// depth.
func TestFlattenDeep(t *testing.T) {
	for _, depth := range []int{150, 20_000, 200_000} {
		doc := []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		values, err := Flatten(doc)
		runtime.ReadMemStats(&after)
		switch {
		case depth <= 10_000 && (err != nil || len(values) != 1):
			t.Errorf("depth %d: %d leaves, %v", depth, len(values), err)
		case depth > 10_000 && err == nil:
			t.Errorf("depth %d: flattened", depth)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("depth %d: %d bytes allocated", depth, alloc)
		}
	}
}
