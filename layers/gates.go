package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// gatesKey is where every version of a Kubernetes component's
// configuration keeps its feature gates.
const gatesKey = "/featureGates"

// gateCheck takes the feature gates the component does not know out of a
// file as it is read, before the file is decoded into its type: each such
// gate is refused wherever it is set, so carrying a hostile file's 250,000
// of them through decoding, conversion, merging and defaulting to the
// validator would only make refusing it cost several times what reading
// it does. Component.load names them after the validator's errors.
type gateCheck struct {
	known func(name string) bool
	// unknown holds the gates the last document filtered sets, by name,
	// that known does not know (removals, null, are kept in the file).
	unknown map[string]bool
}

// keepsGates reports an error unless every version of kind keeps its
// feature gates at gatesKey, a map of booleans.
func keepsGates(kind *scheme.Kind) error {
	want := reflect.TypeFor[map[string]bool]()
	for _, v := range kind.Versions() {
		if v.Lifecycle == scheme.Removed {
			continue
		}
		gv := schema.GroupVersion{Group: kind.GroupKind().Group, Version: v.Version}
		obj, err := kind.New(gv)
		if err != nil {
			continue // a version that holds other kinds of the group
		}
		if t, ok := typed.For(reflect.TypeOf(obj)).At(gatesKey); !ok || t != want {
			return fmt.Errorf("FeatureGates is set, but %s keeps no featureGates map of booleans at the top level", gv)
		}
	}
	return nil
}

// filter returns the document j with the gates known does not know taken
// out of its featureGates, and keeps them in g.unknown. It returns j as it
// is when it cannot be sure of what j holds (featureGates named twice, or
// not an object of booleans): decoding it says what is wrong.
func (g *gateCheck) filter(j []byte) []byte {
	g.unknown = nil
	start, end, ok := member(j, gatesKey[1:])
	if !ok {
		return j
	}
	var gates map[string]*bool
	if err := json.Unmarshal(j[start:end], &gates); err != nil {
		return j
	}
	kept := map[string]*bool{}
	for n, v := range gates {
		if v == nil || g.known(n) {
			kept[n] = v
			continue
		}
		if g.unknown == nil {
			g.unknown = map[string]bool{}
		}
		g.unknown[n] = *v
	}
	if g.unknown == nil {
		return j
	}
	val, err := json.Marshal(kept)
	if err != nil {
		g.unknown = nil
		return j
	}
	return slices.Concat(j[:start], val, j[end:])
}

// member returns where the value of the member name of the JSON object j
// starts and ends, reporting false when j is not an object or does not
// name it exactly once.
func member(j []byte, name string) (start, end int, ok bool) {
	if !bytes.Contains(j, []byte(`"`+name+`"`)) {
		return 0, 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if t != name {
			continue
		}
		if ok {
			return 0, 0, false
		}
		end = int(dec.InputOffset())
		start = end - len(raw)
		if start < 0 || !bytes.Equal(j[start:end], raw) {
			return 0, 0, false
		}
		ok = true
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return 0, 0, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, 0, false // more after the object
	}
	return start, end, ok
}

// refusedGates returns the errors of the unknown gates files named, each
// credited to its file (layers[i] is the layer of files[i]), but for a
// gate a layer above sets or removes: whatever is wrong with that is for
// the validator to say of the layer above. above holds the layers above
// every file (flags).
func refusedGates(gate featuregate.MutableFeatureGate, files []*File, layers, above []*merge.Layer) validation.ErrorList {
	set := map[string]bool{} // the gate keys a layer above sets or removes
	whole := false           // a layer above sets all of featureGates
	note := func(l *merge.Layer) {
		for k := range l.Values {
			if k == gatesKey {
				whole = true
			} else if len(k) > len(gatesKey) && k[:len(gatesKey)+1] == gatesKey+"/" {
				set[k] = true
			}
		}
	}
	for _, l := range above {
		note(l)
	}
	var out validation.ErrorList
	for i := len(files) - 1; i >= 0 && !whole; i-- {
		g := files[i].gates
		if g != nil && len(g.unknown) > 0 {
			named := map[string]bool{}
			for n, v := range g.unknown {
				if k := merge.Pointer(gatesKey[1:], n); !set[k] {
					named[n] = v
					set[k] = true
				}
			}
			var list validation.ErrorList
			for _, e := range validation.FeatureGates(gate, named, field.NewPath(gatesKey[1:])) {
				list = append(list, &validation.Error{Err: e, Key: validation.KeyOf(e.Field), Source: layers[i].Source})
			}
			out = append(list, out...)
		}
		note(layers[i])
	}
	return out
}
