package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"unicode/utf8"

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
// out of its featureGates, and keeps them in g.unknown; every other byte
// of j is kept as it was. It returns j as it is when it cannot be sure of
// what j holds (featureGates named twice, a gate named twice, or not an
// object of booleans and nulls): decoding it says what is wrong.
func (g *gateCheck) filter(j []byte) []byte {
	g.unknown = nil
	start, end, ok := member(j, gatesKey[1:])
	if !ok {
		return j
	}
	entries, ok := scanGates(j[start:end])
	if !ok {
		return j
	}
	var unknown map[string]bool
	kept := map[string]bool{}
	out := make([]byte, 0, end-start)
	out = append(out, '{')
	for _, e := range entries {
		if _, again := unknown[e.name]; again || kept[e.name] {
			return j // a gate named twice: the decoder's to refuse
		}
		if e.value == nil || g.known(e.name) {
			kept[e.name] = true
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, j[start+e.from:start+e.to]...)
			continue
		}
		if unknown == nil {
			unknown = map[string]bool{}
		}
		unknown[e.name] = *e.value
	}
	if unknown == nil {
		return j
	}
	g.unknown = unknown
	out = append(out, '}')
	return slices.Concat(j[:start], out, j[end:])
}

// gateEntry is one member of a featureGates object: its name, its value
// (nil for null), and where the member, name and value, starts and ends.
type gateEntry struct {
	name     string
	value    *bool
	from, to int
}

// scanGates reads the JSON object obj, whose members must all be true,
// false or null, in one pass; false when obj is anything else.
func scanGates(obj []byte) ([]gateEntry, bool) {
	i := 0
	ws := func() {
		for i < len(obj) && (obj[i] == ' ' || obj[i] == '\t' || obj[i] == '\n' || obj[i] == '\r') {
			i++
		}
	}
	literal := func(lit string) bool {
		if !bytes.HasPrefix(obj[i:], []byte(lit)) {
			return false
		}
		i += len(lit)
		return true
	}
	ws()
	if i == len(obj) || obj[i] != '{' {
		return nil, false
	}
	i++
	ws()
	var out []gateEntry
	if i < len(obj) && obj[i] == '}' {
		return out, i+1 == len(obj)
	}
	t, f := true, false
	for {
		ws()
		from := i
		if i == len(obj) || obj[i] != '"' {
			return nil, false
		}
		escaped := false
		for i++; i < len(obj) && obj[i] != '"'; i++ {
			if obj[i] == '\\' {
				escaped = true
				i++
			}
		}
		if i >= len(obj) {
			return nil, false
		}
		i++
		raw := obj[from:i]
		name := string(raw[1 : len(raw)-1])
		if escaped || !utf8.Valid(raw) {
			// As the decoder reads it: escapes resolved, invalid
			// UTF-8 replaced.
			if err := json.Unmarshal(raw, &name); err != nil {
				return nil, false
			}
		}
		ws()
		if !literal(":") {
			return nil, false
		}
		ws()
		e := gateEntry{name: name, from: from}
		switch {
		case literal("true"):
			e.value = &t
		case literal("false"):
			e.value = &f
		case literal("null"):
		default:
			return nil, false
		}
		e.to = i
		out = append(out, e)
		ws()
		switch {
		case literal(","):
		case literal("}"):
			ws()
			return out, i == len(obj)
		default:
			return nil, false
		}
	}
}

// member returns where the value of the member name of the JSON object j
// starts and ends, reporting false when j is not an object or does not
// name it exactly once.
func member(j []byte, name string) (start, end int, ok bool) {
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

// gatedOff returns an error for each key a layer sets, in res, under a
// field that needs a feature gate (gated, field → gate) that is off,
// credited to that layer (a default is no setting). A gate is as the
// layers set it in featureGates (files and --feature-gates), or else at
// its default in gate; with no gate (a component without
// Component.FeatureGates), only the layers can turn it on, and a name the
// tag misspells is never known. A gate the component does not know is an
// error of the kind, not of a layer.
func gatedOff(res *merge.Result, gated map[string]string, gate featuregate.MutableFeatureGate) (validation.ErrorList, error) {
	if gate != nil {
		known := validation.Recognizes(gate)
		for _, f := range slices.Sorted(maps.Keys(gated)) {
			if !known(gated[f]) {
				return nil, fmt.Errorf("field %s needs feature gate %s, which the component does not know", fieldName(f), gated[f])
			}
		}
	}
	values := res.Values()
	on := func(g string) bool {
		if v, ok := values[merge.Pointer(gatesKey[1:], g)]; ok {
			return v == "true"
		}
		return gate != nil && gate.Enabled(featuregate.Feature(g))
	}
	if gate != nil {
		// As the component will run: AllAlpha and AllBeta set every
		// alpha or beta gate the layers do not name.
		set, known := map[string]bool{}, validation.Recognizes(gate)
		for k, v := range values {
			if seg, ok := merge.Segments(k); ok && len(seg) == 2 && seg[0] == gatesKey[1:] && known(seg[1]) && (v == "true" || v == "false") {
				set[seg[1]] = v == "true"
			}
		}
		if runs := gate.DeepCopy(); runs.SetFromMap(set) == nil {
			on = func(g string) bool { return runs.Enabled(featuregate.Feature(g)) }
		}
	}
	var out validation.ErrorList
	fields := slices.Sorted(maps.Keys(gated))
	for _, key := range slices.Sorted(maps.Keys(values)) {
		for _, f := range fields {
			if !merge.Covers(f, key) || on(gated[f]) {
				continue
			}
			src, _ := res.SourceOf(key)
			if src.Origin == OriginDefault || src.Origin == OriginLegacyDefault || src.Origin == OriginRunning {
				break // not set: a version's default, or the value running
			}
			path := field.NewPath(fieldName(key))
			out = append(out, &validation.Error{Key: key, Source: src,
				Err: field.Forbidden(path, fmt.Sprintf("needs feature gate %s, which is off", gated[f]))})
			break
		}
	}
	return out, nil
}
