package typed

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"testing"
)

type embeddedMaps struct {
	Labels map[string]string `json:"labels,omitempty"`
}

type objectWithMaps struct {
	embeddedMaps
	Kind   string           `json:"kind,omitempty"`
	Gates  map[string]bool  `json:"featureGates,omitempty"`
	Limits map[string]int32 `json:"limits"`
	Counts map[string]uint8 `json:"counts,omitempty"`
	Named  *struct{ X int } `json:"named,omitempty"`
	Nested struct {
		Inner map[string]bool `json:"inner,omitempty"`
	} `json:"nested"`
	List []string `json:"list,omitempty"`
}

// FuzzFlattenObject checks FlattenObject against what it stands for,
// Flatten of encoding/json's writing, on any value of a type with maps
// of every kind it handles itself and some it does not.
func FuzzFlattenObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"featureGates":{"A":true,"B":false},"limits":{"x":-3},"labels":{"a/b~c":"<&>","é":"\u2028"}}`,
		`{"limits":null,"counts":{},"nested":{"inner":{"z":true}},"list":["a"]}`,
		`{"featureGates":{},"labels":{"":""},"kind":"K","named":{"X":1}}`,
	} {
		f.Add([]byte(s))
	}
	typ := For(reflect.TypeFor[objectWithMaps]())
	f.Fuzz(func(t *testing.T, doc []byte) {
		var obj objectWithMaps
		if json.Unmarshal(doc, &obj) != nil {
			return
		}
		raw, err := json.Marshal(&obj)
		if err != nil {
			return
		}
		want, werr := typ.Flatten(raw)
		got, err := typ.FlattenObject(&obj)
		if (err == nil) != (werr == nil) || !maps.Equal(got, want) {
			t.Fatalf("%s:\nFlattenObject %v (%v)\nFlatten       %v (%v)", doc, got, err, want, werr)
		}
	})
}

// TestScalarMaps: the maps FlattenObject flattens itself are those
// encoding/json writes as plain members, embedded ones included.
func TestScalarMaps(t *testing.T) {
	var names []string
	for _, m := range For(reflect.TypeFor[objectWithMaps]()).scalarMaps() {
		names = append(names, m.name)
	}
	if got := fmt.Sprint(names); got != "[labels featureGates limits counts]" {
		t.Errorf("scalar maps %s", got)
	}
}

// redacting writes its tokens redacted: a type that writes itself, or
// embeds one that does, is flattened as it writes itself.
type redacting struct {
	Tokens map[string]string `json:"tokens"`
}

func (r *redacting) MarshalJSON() ([]byte, error) {
	out := map[string]string{}
	for k := range r.Tokens {
		out[k] = "REDACTED"
	}
	return json.Marshal(map[string]any{"tokens": out})
}

type embedsRedacting struct {
	redacting
	Gates map[string]bool `json:"gates"`
}

func TestFlattenObjectOfTypesThatWriteThemselves(t *testing.T) {
	for _, obj := range []any{&redacting{Tokens: map[string]string{"a": "secret"}}, &embedsRedacting{redacting{map[string]string{"a": "secret"}}, map[string]bool{"G": true}}} {
		typ := For(reflect.TypeOf(obj))
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := typ.Flatten(raw)
		got, err := typ.FlattenObject(obj)
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("%T: %v (%v), want %v", obj, got, err, want)
		}
	}
}
