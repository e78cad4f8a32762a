package layers

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

// convertLeaves expresses a document written in another version as keys of
// version into, the merge version: convertEach of its leaves, every leaf
// mapping to at least one key. A leaf that is no field of its version
// (Warn and Ignore modes let one through) maps to none and is left out; a
// null, a removal (RFC 7386), removes the keys a value of its field would
// map to. undefaulted is the whole document converted, with no defaults,
// every key of version into.
func convertLeaves(c *scheme.Kind, doc *scheme.Document, into schema.GroupVersion, dst *typed.Type) (keys, undefaulted map[string]string, err error) {
	from := doc.GVK.GroupVersion()
	srcObj, err := c.New(from)
	if err != nil {
		return nil, nil, err
	}
	src := typed.For(reflect.TypeOf(srcObj))
	leaves, err := src.Flatten(doc.JSON)
	if err != nil {
		return nil, nil, err
	}
	delete(leaves, "/apiVersion")
	delete(leaves, "/kind")
	probes := map[string]string{} // of the removals: where a value would go
	for k, v := range leaves {
		if _, ok := src.At(k); !ok {
			delete(leaves, k)
		} else if v == merge.Tombstone {
			delete(leaves, k)
			probes[k] = "{}"
			if z, ok := zeroJSON(src, k); ok {
				if p, ok := probeFor(src, k, z); ok {
					probes[k] = p
				}
			}
		}
	}
	all := doc.JSON
	if len(probes) > 0 {
		all = nil // converting its nulls would set zero values: the leaves are the document
	}
	each, whole, base, err := convertEach(c, from, into, all, leaves, dst)
	if err != nil {
		return nil, nil, err
	}
	if len(probes) > 0 {
		removed, own, _, err := convertEach(c, from, into, nil, probes, dst)
		if err != nil {
			return nil, nil, err
		}
		for key := range probes {
			to := removed[key]
			if _, ok := own[key]; ok {
				to = map[string]string{key: ""}
			}
			for k := range to {
				to[k] = merge.Tombstone
			}
			each[key] = to
		}
	}
	out, err := joinKeys(each, whole, into)
	if err != nil {
		return nil, nil, err
	}
	undefaulted = base
	maps.Copy(undefaulted, whole)
	return out, undefaulted, nil
}

// joinKeys returns the keys of version into that the leaves of each and
// the whole document map to; a leaf that maps to none is an error naming
// it, the first in key order. A leaf each does not hold maps to the key
// of its name, which whole holds.
func joinKeys(each map[string]map[string]string, whole map[string]string, into schema.GroupVersion) (map[string]string, error) {
	out := make(map[string]string, len(whole)+len(each))
	var lost []string
	for key, to := range each {
		if len(to) == 0 {
			lost = append(lost, key)
		}
		maps.Copy(out, to)
	}
	if len(lost) > 0 {
		return nil, fmt.Errorf("key %q has no counterpart in %s", slices.Min(lost), into)
	}
	maps.Copy(out, whole) // keys that leaves feed together
	return out, nil
}

// convertEach converts the leaves of version from, of the document doc
// (nil: the leaves are the document), into keys of version into, and returns, for each leaf that does not map
// to the key of its own name, the keys it maps to with their values,
// every key the whole document maps to, and the conversion of an
// empty document (the baseline, which the caller may keep). Converting the whole partial document through the hub and
// keeping every key would lie: a field the document leaves unset (a nil
// *bool) can come back as an explicit false when the hub type has no
// pointer, and would then override lower layers. So the keys the leaves
// produce are found by comparing with the conversion of an empty
// document, and a leaf is converted on its own only when the whole
// document cannot say where it went:
//
//  1. Convert the empty document once: the baseline.
//  2. Convert the whole document once. Every key whose value differs from
//     the baseline is one the document maps to; a leaf whose own key is
//     among them maps there (a field of the same name in both versions,
//     every entry of a map), and needs nothing more.
//  3. Each other leaf is converted in a document holding only that leaf;
//     every key whose value differs from the baseline is one the leaf
//     maps to, with the value the whole document gave it when it gave
//     one (two leaves may feed one key).
//  4. When such a leaf holds a zero value (false, 0, "", []), convert it
//     again with a non-zero probe of the same type, to find keys an
//     explicit zero maps to even though it equals the baseline or
//     vanishes under omitempty (kubernetes#131355); those keys get the
//     zero value.
//  5. A leaf that maps to nothing keeps its key when version into has the
//     same field, and maps to nothing otherwise.
//
// A document of many leaves that keep their names (a map of 250,000
// feature gates) is so converted twice, not once per leaf.
func convertEach(c *scheme.Kind, from, into schema.GroupVersion, doc []byte, leaves map[string]string, dst *typed.Type) (each map[string]map[string]string, whole, base map[string]string, err error) {
	srcObj, err := c.New(from)
	if err != nil {
		return nil, nil, nil, err
	}
	src := typed.For(reflect.TypeOf(srcObj))
	convertDoc := func(d []byte) (map[string]string, error) {
		out, err := c.ConvertDocument(d, from, into)
		if err != nil {
			return nil, err
		}
		return dst.FlattenObject(out)
	}
	convert := func(vals map[string]string) (map[string]string, error) {
		d, err := src.Unflatten(vals)
		if err != nil {
			return nil, err
		}
		return convertDoc(d)
	}
	base, err = convert(map[string]string{}) // (1)
	if err != nil {
		return nil, nil, nil, err
	}
	changed := func(k, v string) bool {
		bv, ok := base[k]
		return (!ok || bv != v) && k != "/apiVersion" && k != "/kind"
	}
	if doc == nil {
		whole, err = convert(leaves) // (2)
	} else {
		whole, err = convertDoc(doc) // (2): the document the leaves are of
	}
	if err != nil {
		// Name the leaf at fault, when one alone fails.
		for _, key := range slices.Sorted(maps.Keys(leaves)) {
			if _, lerr := convert(map[string]string{key: leaves[key]}); lerr != nil {
				return nil, nil, nil, fmt.Errorf("key %q: converting from %s to %s: %w", key, from, into, lerr)
			}
		}
		return nil, nil, nil, fmt.Errorf("converting from %s to %s: %w", from, into, err)
	}
	for k, v := range whole {
		if !changed(k, v) {
			delete(whole, k)
		}
	}
	out := map[string]map[string]string{}
	for key, v := range leaves {
		if _, ok := whole[key]; ok {
			continue // it maps to its own key, which whole holds
		}
		keys := map[string]string{}
		out[key] = keys
		conv, err := convert(map[string]string{key: v}) // (3)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("key %q: converting from %s to %s: %w", key, from, into, err)
		}
		for k, cv := range conv {
			if changed(k, cv) {
				if wv, ok := whole[k]; ok {
					cv = wv
				}
				keys[k] = cv
			}
		}
		if probe, ok := probeFor(src, key, v); ok { // (4)
			if pconv, err := convert(map[string]string{key: probe}); err == nil {
				for k, pv := range pconv {
					if !changed(k, pv) {
						continue
					}
					if _, done := keys[k]; done {
						continue
					}
					if cv, ok := conv[k]; ok {
						keys[k] = cv
					} else if z, ok := zeroJSON(dst, k); ok {
						keys[k] = z
					}
				}
			}
		}
		if len(keys) == 0 { // (5)
			if _, ok := dst.At(key); ok {
				keys[key] = v
			}
		}
	}
	return out, whole, base, nil
}

// probeFor returns a non-zero value of the type at key when v is a zero
// value, and false when v is not a zero value.
func probeFor(s *typed.Type, key, v string) (string, bool) {
	switch v {
	case "false":
		return "true", true
	case "0":
		return "1", true
	case `""`:
		t, ok := s.At(key)
		if !ok || t.Kind() != reflect.String {
			return "", false
		}
		return `"strata-probe"`, true
	case "[]":
		t, ok := s.At(key)
		if !ok || t.Kind() != reflect.Slice {
			return "", false
		}
		z, err := json.Marshal(reflect.New(t.Elem()).Elem().Interface())
		if err != nil {
			return "", false
		}
		return "[" + string(z) + "]", true
	}
	return "", false
}

// zeroJSON returns the JSON of the zero value of the type at key.
func zeroJSON(s *typed.Type, key string) (string, bool) {
	t, ok := s.At(key)
	if !ok {
		return "", false
	}
	switch t.Kind() {
	case reflect.Slice:
		return "[]", true
	case reflect.Map:
		return "", false
	}
	z, err := json.Marshal(reflect.New(t).Elem().Interface())
	return string(z), err == nil
}
