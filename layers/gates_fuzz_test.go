package layers

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/stratacfg/strata/merge"
	"k8s.io/component-base/featuregate"
)

// FuzzGateFilter filters hostile documents: what the filter leaves alone
// comes back byte for byte; what it changes is a JSON object whose other
// members are untouched and whose featureGates holds what the document's
// did, less the gates it took out, each of which known does not know.
func FuzzGateFilter(f *testing.F) {
	for _, seed := range []string{
		`{"featureGates":{"Known":true,"Foo":false}}`,
		`{"a":1,"featureGates":{"Foo":true,"Bar":null},"b":[{"featureGates":{"X":true}}]}`,
		`{"featureGates":{"Foo":true},"featureGates":{"Bar":true}}`,
		`{"featureGates":[true]}`,
		`{"featureGates": {"Foo": true} , "z": "featureGates"}`,
		`[{"featureGates":{"Foo":true}}]`,
		`{"featureGates":{"Foo":1}}`,
		`{"featureGates":{"Foo":true}`,
		`{"featureGates":{"Known":true,"Known":false,"Foo":true}}`,
		`{"featureGate\u0073":{"F\u006fo":true, "K\"":null}}`,
		`{"featureGates":{"Foo":true,}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, j []byte) {
		in := bytes.Clone(j)
		g := &gateCheck{known: func(n string) bool { return n == "Known" }}
		out := g.filter(j)
		if !bytes.Equal(j, in) {
			t.Fatalf("the filter changed its input: %q", j)
		}
		if g.unknown == nil {
			if !bytes.Equal(out, in) {
				t.Fatalf("nothing taken out, yet %q became %q", in, out)
			}
			return
		}
		again := &gateCheck{known: g.known}
		if twice := again.filter(out); again.unknown != nil || !bytes.Equal(twice, out) {
			t.Fatalf("filtering %q again took out %v", out, again.unknown)
		}
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal(in, &before); err != nil {
			t.Fatalf("gates taken out of a document that is no object: %q: %v", in, err)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("the filter made %q of %q: %v", out, in, err)
		}
		var was, is map[string]*bool
		if err := json.Unmarshal(before["featureGates"], &was); err != nil {
			t.Fatalf("gates taken out of %q: %v", before["featureGates"], err)
		}
		if err := json.Unmarshal(after["featureGates"], &is); err != nil {
			t.Fatal(err)
		}
		for n, v := range g.unknown {
			if n == "Known" || was[n] == nil || *was[n] != v {
				t.Fatalf("gate %q=%v taken out of %q", n, v, before["featureGates"])
			}
			if _, ok := is[n]; ok {
				t.Fatalf("gate %q taken out, yet left in %q", n, out)
			}
			delete(was, n)
		}
		if !maps.EqualFunc(was, is, func(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }) {
			t.Fatalf("gates kept: %v, want %v", is, was)
		}
		delete(before, "featureGates")
		delete(after, "featureGates")
		if !maps.EqualFunc(before, after, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("other members changed: %q became %q", in, out)
		}
	})
}

// TestGatedOff: a field that needs a feature gate is refused where a layer
// sets it while the gate is off, credited to that layer; the layers'
// featureGates turn a gate on even for a component with no feature gates
// of its own; a version's default is no setting; and a gate the
// component does not know is an error of the kind.
func TestGatedOff(t *testing.T) {
	file := merge.Source{Origin: OriginFile, Name: "a.yaml"}
	res := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: OriginDefault, Name: "v1"}, Values: map[string]string{"/c": "2"}},
		&merge.Layer{Source: file, Values: map[string]string{"/items/max": "5", "/featureGates/B": "true", "/b": "1"}},
	)
	gated := map[string]string{"/items": "A", "/b": "B", "/c": "C"}
	errs, err := gatedOff(res, gated, nil)
	if err != nil || len(errs) != 1 || errs[0].Key != "/items/max" || errs[0].Source != file ||
		errs[0].Error() != "file a.yaml: items.max: Forbidden: needs feature gate A, which is off" {
		t.Errorf("gatedOff = %v, %v; want items.max alone refused, credited to a.yaml", errs, err)
	}
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{"A": {Default: true, PreRelease: featuregate.Beta}, "B": {PreRelease: featuregate.Alpha}}); err != nil {
		t.Fatal(err)
	}
	if _, err := gatedOff(res, gated, gate); err == nil || err.Error() != "field c needs feature gate C, which the component does not know" {
		t.Errorf("an unknown gate: %v", err)
	}
	delete(gated, "/c")
	if errs, err := gatedOff(res, gated, gate); err != nil || len(errs) != 0 {
		t.Errorf("A on by default, B on in the layers: %v, %v", errs, err)
	}
}
