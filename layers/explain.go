package layers

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/internal/secret"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// Explanation is the JSON form of a configuration and its provenance, as
// --explain prints it.
type Explanation struct {
	Config     json.RawMessage          `json:"config"`
	Provenance map[string]KeyProvenance `json:"provenance"`
	// Skipped is Loaded.Skipped: what was read and left out, with why.
	Skipped []string `json:"skipped,omitempty"`
}

// KeyProvenance says where one key's value came from.
type KeyProvenance struct {
	Source string `json:"source"`
	// Shadowed lists the lower layers that also set the key, the nearest
	// first.
	Shadowed []string `json:"shadowed"`
	// ShadowedValues are the values those layers set, in the same order,
	// as JSON; a value that is or holds a reference (to a Secret's key) is
	// null: what it names stays out of the output.
	ShadowedValues []json.RawMessage `json:"shadowedValues,omitempty"`
	// Removed says that the value is a null that removed the key: the
	// key is absent from the configuration, or has its default.
	Removed bool `json:"removed,omitempty"`
	// Replaced lists what lower layers set above or under the key that
	// its value replaced, each as "KEY from SOURCE": the members of a map
	// a null erased, say.
	Replaced []string `json:"replaced,omitempty"`
	// List says that the key is an element of a list merged per element,
	// and how the list merges: "map" (by its key member), "set" or
	// "append". A set's element is keyed by itself, an appended element
	// by its layer's place and its own (LLLL.PPPPPP).
	List string `json:"list,omitempty"`
}

// Explain returns the effective configuration in version gv and the
// provenance of every effective key, keyed by gv's field paths: explained
// in an older version, a key the merge version renamed is found under its
// old name. A key of the merge version that gv does not have is left out,
// as it is of the configuration.
func (c *Component[T]) Explain(cfg *Loaded[T], gv schema.GroupVersion) (*Explanation, error) {
	doc, err := c.Kind.Encode(cfg.Object, gv, scheme.JSON)
	if err != nil {
		return nil, err
	}
	fields := c.Kind.Fields(gv)
	hidden := fields != nil && len(fields.Keys(validation.Secret)) > 0
	told := func(key string) string { return key }
	if hidden { // a key under a secret field is told as the field: a secret map's keys are the secret
		told = func(key string) string { return secretField(c.Kind.MergeFields(), key) }
	}
	prov := provenances(cfg.Provenance, told)
	if gv != c.Kind.MergeVersion() {
		if prov, err = c.provenanceIn(gv, cfg.Provenance, prov); err != nil {
			return nil, fmt.Errorf("explaining in %s: %w", gv, err)
		}
	}
	if hidden {
		// Fields marked secret show CLASSIFIED, as on the z-pages:
		// --explain's output is pasted where the files are not.
		if doc, err = secret.Classify(doc, func(key string) bool { return fields.Has(key, validation.Secret) }); err != nil {
			return nil, err
		}
		prov = tellSecretsWhole(fields, prov)
	}
	return &Explanation{Config: json.RawMessage(doc), Provenance: prov, Skipped: cfg.Skipped}, nil
}

// provenanceIn keys prov, the provenance of the merge version's keys of r,
// by the keys of version gv each maps to (convertEach). When several keys
// map to one, it takes the provenance of the one a layer set last, not
// defaulting.
func (c *Component[T]) provenanceIn(gv schema.GroupVersion, r *merge.Result, prov map[string]KeyProvenance) (map[string]KeyProvenance, error) {
	obj, err := c.Kind.New(gv)
	if err != nil {
		return nil, err
	}
	values := r.Values()
	each, whole, _, err := convertEach(c.Kind, c.Kind.MergeVersion(), gv, nil, values, typed.For(reflect.TypeOf(obj)))
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(values))
	out := make(map[string]KeyProvenance, len(keys))
	for _, from := range keys {
		p := prov[from]
		to, ok := each[from]
		if !ok {
			if _, ok := whole[from]; !ok {
				continue
			}
			to = map[string]string{from: ""} // its own key
		}
		for to := range to {
			if cur, ok := out[to]; ok && cur.Source != OriginDefault {
				continue
			}
			out[to] = p
		}
	}
	// What a layer removed has no value to convert: a field of the same
	// key in gv keeps its removal.
	for _, k := range r.Tombstones() {
		if _, ok := typed.For(reflect.TypeOf(obj)).At(k); ok {
			if _, taken := out[k]; !taken {
				out[k] = prov[k]
			}
		}
	}
	return out, nil
}

// shownValue is a shadowed value as --explain shows it: null in place of
// one that is or holds a reference.
func shownValue(v string) json.RawMessage {
	if strings.Contains(v, `"$ref"`) {
		return json.RawMessage("null")
	}
	return json.RawMessage(v)
}

// Provenances returns the provenance of every effective key of r, and of
// every key a layer removed with a null.
func Provenances(r *merge.Result) map[string]KeyProvenance {
	return provenances(r, func(key string) string { return key })
}

// provenances is Provenances naming each key a value replaced as told
// says.
func provenances(r *merge.Result, told func(key string) string) map[string]KeyProvenance {
	out := map[string]KeyProvenance{}
	for _, k := range append(r.Keys(), r.Tombstones()...) {
		p, _ := r.Explain(k)
		kp := KeyProvenance{Source: p.Source.String(), Shadowed: []string{}, Removed: p.Value == merge.Tombstone}
		for _, s := range p.Shadowed {
			kp.Shadowed = append(kp.Shadowed, s.Source.String())
			kp.ShadowedValues = append(kp.ShadowedValues, shownValue(s.Value))
		}
		for _, c := range p.Replaced {
			if r := told(c.Key) + " from " + c.Source.String(); !slices.Contains(kp.Replaced, r) {
				kp.Replaced = append(kp.Replaced, r)
			}
		}
		if i := strings.LastIndexByte(k, '/'); i > 0 {
			if member, ok := r.ListMember(k[:i]); ok {
				kp.List = merge.ListStrategy(member)
			}
		}
		out[k] = kp
	}
	return out
}

// tellSecretsWhole returns prov with what is under a field marked secret
// told under the field's own key, since a secret map's keys are the
// secret: the sources that set anything under it, joined, and the layers
// it shadowed. No value a lower layer set at or in a secret is shown.
func tellSecretsWhole(fields *validation.Fields, prov map[string]KeyProvenance) map[string]KeyProvenance {
	classified := json.RawMessage(`"` + secret.Classified + `"`)
	out := make(map[string]KeyProvenance, len(prov))
	for _, k := range slices.Sorted(maps.Keys(prov)) { // a field before what is under it
		p := prov[k]
		if secretAt(fields, k) {
			for i := range p.ShadowedValues {
				p.ShadowedValues[i] = classified
			}
		}
		at := secretField(fields, k)
		if at != k {
			p.List = ""
		}
		was, ok := out[at]
		if !ok {
			out[at] = p
			continue
		}
		if !slices.Contains(strings.Split(was.Source, ", "), p.Source) {
			was.Source += ", " + p.Source
		}
		for _, s := range p.Shadowed {
			if !slices.Contains(was.Shadowed, s) {
				was.Shadowed = append(was.Shadowed, s)
				was.ShadowedValues = append(was.ShadowedValues, classified)
			}
		}
		was.Removed = was.Removed && p.Removed
		for _, r := range p.Replaced {
			if !slices.Contains(was.Replaced, r) {
				was.Replaced = append(was.Replaced, r)
			}
		}
		out[at] = was
	}
	return out
}
