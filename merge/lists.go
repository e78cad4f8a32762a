package merge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Lists declares the arrays that merge per element, as server-side apply
// merges a +listType=map list: each maps a pattern naming an array (a JSON
// pointer whose segments may be "*") to the member that keys its elements,
// "name" for Greenhouse's option values.
//
// Flattened, the element of a keyed list at P whose key is k is the leaf
// P/k (k escaped as a pointer segment; a key that is not a string is its
// JSON text), and its value is the whole element. An element therefore
// wins or loses whole, with provenance of its own, beside the elements
// other layers give; a tombstone at P/k removes that one element (in a
// document, the element {"name":"k","$patch":"delete"}, as a strategic
// merge patch writes it); and an
// element that holds a value in one layer and a reference in another never
// ends with both or neither. Unflattened, a keyed list is an array of its
// elements in the byte order of their keys.
//
// Instead of a key member, an array's pattern may map to a strategy for
// arrays whose elements have no key (replace, the whole array, is the
// default):
//
//   - ListSet merges an array of scalars as a set, as server-side apply
//     merges a +listType=set list: each element is the leaf P/e (e as a
//     keyed element's key is written), so each is one element however
//     many layers give it, with provenance of its own; a tombstone at
//     P/e removes it (in a document, the member
//     "$deleteFromPrimitiveList/NAME": [e, …] beside the set NAME, as a
//     strategic merge patch writes it). Unflattened, a set is its
//     elements in the byte order of their leaves. As a keyed element's
//     key, the string "1" and the number 1 name one element: a set of a
//     Go type holds one type.
//   - ListAppend gives every layer's elements, lower layers' first, each
//     in its layer's order and with its layer as provenance: the element
//     at position i is the leaf P/i (six digits), which Merge makes
//     P/L.i for the layer at index L, so that layers never meet on one.
//     Unflattened, an appended list is its elements in that order.
type Lists map[string]string

// The list strategies a pattern of Lists may name in place of a key
// member.
const (
	ListSet    = "+set"
	ListAppend = "+append"
)

// deleteFromSet prefixes the member of a document that removes elements
// from the set beside it.
const deleteFromSet = "$deleteFromPrimitiveList/"

// Member returns what l declares of the list at key, a JSON pointer:
// the member that keys its elements, ListSet or ListAppend; false when l
// declares nothing of it.
func (l Lists) Member(key string) (string, bool) { return l.keyOf(key) }

// keyOf returns the key member of the list at key, if key names a keyed
// list.
func (l Lists) keyOf(key string) (string, bool) {
	for p, member := range l {
		if matches(p, key) {
			return member, true
		}
	}
	return "", false
}

// matches reports whether pattern names key itself: the same number of
// segments, each equal or "*".
func matches(pattern, key string) bool {
	return Covers(pattern, key) && len(segmentsOf(pattern)) == len(segmentsOf(key))
}

func segmentsOf(p string) []string {
	s, _ := Segments(p)
	return s
}

// Flatten is the package's Flatten with the keyed lists of l flattened
// per element. Two elements with one key in the document are an error
// naming both positions.
func (l Lists) Flatten(doc []byte) (map[string]string, error) {
	if out, err := l.flattenScan(doc); err == nil {
		return out, nil
	}
	// What the scan does not read, read the slow way, which says what is
	// wrong.
	if err := checkKeys(doc); err != nil {
		return nil, err
	}
	out := make(map[string]string)
	if err := l.flattenInto(out, "", doc); err != nil {
		return nil, err
	}
	return out, nil
}

// FlattenValue flattens the JSON value v found at key into out: an object
// is descended into, a keyed list of l flattened per element, anything else
// is one leaf. It is how a string value that parses to an object (a flag
// such as --feature-gates) merges per key.
func (l Lists) FlattenValue(out map[string]string, key string, v []byte) error {
	if err := checkKeys(v); err != nil {
		return fmt.Errorf("%s: %w", displayKey(key), err)
	}
	return l.flattenValue(out, key, v)
}

func (l Lists) flattenValue(out map[string]string, key string, v []byte) error {
	v = bytes.TrimSpace(v)
	if len(l) > 0 && key != "" {
		if member, ok := l.keyOf(key); ok {
			switch {
			case len(v) > 0 && v[0] == '[' && member == ListSet:
				return flattenSet(out, key, v, "")
			case len(v) > 0 && v[0] == '[' && member == ListAppend:
				return flattenAppend(out, key, v)
			case len(v) > 0 && v[0] == '[':
				return flattenList(out, key, member, v)
			case string(v) != Tombstone:
				return fmt.Errorf("%s: %s must be an array", displayKey(key), listKind(member))
			}
		}
	}
	if len(v) > 0 && v[0] == '{' && !isRef(v) {
		return l.flattenInto(out, key, v)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return fmt.Errorf("%s: %w", displayKey(key), err)
	}
	out[key] = buf.String()
	return nil
}

func (l Lists) flattenInto(out map[string]string, prefix string, doc []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil {
		return fmt.Errorf("%s: not a JSON object: %w", displayKey(prefix), err)
	}
	if obj == nil {
		return fmt.Errorf("%s: not a JSON object: null", displayKey(prefix))
	}
	var removals []string
	for name, raw := range obj {
		if _, ok := strings.CutPrefix(name, deleteFromSet); ok {
			removals = append(removals, name)
			continue
		}
		if err := l.flattenValue(out, Child(prefix, name), raw); err != nil {
			return err
		}
	}
	// After the sets they remove from, whatever the members' order.
	for _, name := range removals {
		key := Child(prefix, strings.TrimPrefix(name, deleteFromSet))
		if member, ok := l.keyOf(key); !ok || member != ListSet {
			return fmt.Errorf("%s: %s names no set", displayKey(Child(prefix, name)), strconv.Quote(name))
		}
		removed := map[string]string{}
		if err := flattenSet(removed, key, obj[name], Tombstone); err != nil {
			return fmt.Errorf("%s: %w", displayKey(Child(prefix, name)), err)
		}
		for k := range removed {
			if _, given := out[k]; given {
				return fmt.Errorf("%s: %s both gives and removes %s", displayKey(key), strconv.Quote(name), displayKey(k))
			}
			out[k] = Tombstone
		}
	}
	return nil
}

// ListStrategy names how a list whose Lists entry is member merges: "map"
// (by the key member), "set" or "append".
func ListStrategy(member string) string {
	switch member {
	case ListSet:
		return "set"
	case ListAppend:
		return "append"
	}
	return "map"
}

// listKind names the kind of list member declares, for an error.
func listKind(member string) string {
	switch member {
	case ListSet:
		return "a set"
	case ListAppend:
		return "an appended list"
	}
	return "a keyed list (by " + strconv.Quote(member) + ")"
}

// flattenSet flattens v, an array of scalars, at key, the set, into a
// leaf per element: the element's JSON, or value when it is not empty
// (Tombstone, to remove the elements).
func flattenSet(out map[string]string, key string, v []byte, value string) error {
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return fmt.Errorf("%s: %w", displayKey(key), err)
	}
	at := map[string]int{}
	for i, e := range elems {
		e = bytes.TrimSpace(e)
		if len(e) == 0 || e[0] == '{' || e[0] == '[' || string(e) == "null" {
			return fmt.Errorf("%s[%d]: an element of a set must be a string, a number or a boolean", displayKey(key), i)
		}
		seg, err := scalarSegment(e)
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", displayKey(key), i, err)
		}
		if j, dup := at[seg]; dup {
			return fmt.Errorf("%s: elements [%d] and [%d] are both %s: a set holds each element once", displayKey(key), j, i, e)
		}
		at[seg] = i
		var buf bytes.Buffer
		if err := json.Compact(&buf, e); err != nil {
			return fmt.Errorf("%s[%d]: %w", displayKey(key), i, err)
		}
		if value != "" {
			out[Child(key, seg)] = value
		} else {
			out[Child(key, seg)] = buf.String()
		}
	}
	return nil
}

// scalarSegment is the pointer segment of a set's element: a string as
// it is, anything else as JSON text, as a keyed element's key is written.
func scalarSegment(e json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(e, &s) == nil {
		return s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, e); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// flattenAppend flattens v, an array, at key, an appended list, into a
// leaf per element, P/i.
func flattenAppend(out map[string]string, key string, v []byte) error {
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return fmt.Errorf("%s: %w", displayKey(key), err)
	}
	for i, e := range elems {
		var buf bytes.Buffer
		if err := json.Compact(&buf, e); err != nil {
			return fmt.Errorf("%s[%d]: %w", displayKey(key), i, err)
		}
		out[Child(key, fmt.Sprintf("%06d", i))] = buf.String()
	}
	return nil
}

// appendKey is key, a leaf of an appended list of the layer at index
// layer, as Merge keeps it: P/L.i. Any other key is returned as it is.
func (l Lists) appendKey(key string, layer int) string {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return key
	}
	if member, ok := l.keyOf(key[:i]); !ok || member != ListAppend || strings.IndexByte(key[i+1:], '.') >= 0 {
		return key
	}
	return key[:i+1] + fmt.Sprintf("%04d.", layer) + key[i+1:]
}

// sortElements sorts the pointer segments of a list's elements in the
// order the list holds them: an appended list's by layer, then place,
// as numbers; any other's in byte order.
func sortElements(segs []string, member string) {
	if member != ListAppend {
		sort.Strings(segs)
		return
	}
	slices.SortFunc(segs, func(a, b string) int {
		la, pa := appendPlace(a)
		lb, pb := appendPlace(b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(pa, pb), strings.Compare(a, b))
	})
}

// appendPlace reads an appended element's segment, L.P (or P, in one
// layer's values): its layer and its place there.
func appendPlace(seg string) (layer, place int) {
	l, p, ok := strings.Cut(seg, ".")
	if !ok {
		l, p = "0", seg
	}
	layer, _ = strconv.Atoi(l)
	place, _ = strconv.Atoi(p)
	return layer, place
}

// appends reports whether l names an appended list.
func (l Lists) appends() bool {
	for _, m := range l {
		if m == ListAppend {
			return true
		}
	}
	return false
}

// flattenList flattens the keyed list v at key into one leaf per element.
func flattenList(out map[string]string, key, member string, v []byte) error {
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return fmt.Errorf("%s: %w", displayKey(key), err)
	}
	at := map[string]int{}
	for i, e := range elems {
		seg, err := elementKey(e, member)
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", displayKey(key), i, err)
		}
		if j, dup := at[seg]; dup {
			return fmt.Errorf("%s: elements [%d] and [%d] both have %s %s: a keyed list holds one element per %s", displayKey(key), j, i, member, strconv.Quote(seg), member)
		}
		at[seg] = i
		if removes(e) {
			out[Child(key, seg)] = Tombstone
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, e); err != nil {
			return fmt.Errorf("%s[%d]: %w", displayKey(key), i, err)
		}
		out[Child(key, seg)] = buf.String()
	}
	return nil
}

// removes reports whether element e asks to remove its element:
// {"name":"x","$patch":"delete"}, as a strategic merge patch says it.
func removes(e json.RawMessage) bool {
	if !bytes.Contains(e, []byte(`"$patch"`)) {
		return false
	}
	var obj struct {
		Patch string `json:"$patch"`
	}
	return json.Unmarshal(e, &obj) == nil && obj.Patch == "delete"
}

// elementKey returns the pointer segment of a keyed list's element: its
// key member, a string as it is, anything else as JSON text.
func elementKey(e json.RawMessage, member string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(e, &obj); err != nil || obj == nil {
		return "", fmt.Errorf("an element of a keyed list must be an object with %s", strconv.Quote(member))
	}
	raw, ok := obj[member]
	if !ok || string(raw) == "null" {
		return "", fmt.Errorf("the element has no %s: an element of a keyed list must have it", strconv.Quote(member))
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// Unflatten is the package's Unflatten with each keyed list of l rebuilt
// as an array of its elements, in the byte order of their keys. An
// element that lacks its key member gets it from its pointer; one whose
// key member disagrees with its pointer is an error.
func (l Lists) Unflatten(values map[string]string) ([]byte, error) {
	doc, err := Unflatten(values)
	if err != nil || !l.holdsElements(values) {
		return doc, err
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	if err := l.rebuild(root, ""); err != nil {
		return nil, err
	}
	out, err := marshal(root)
	return []byte(out), err
}

// holdsElements reports whether a key of values lies under a keyed list:
// only then has Unflatten's document an object to turn into an array.
func (l Lists) holdsElements(values map[string]string) bool {
	for p := range l {
		for k := range values {
			if Covers(p, k) && !matches(p, k) {
				return true
			}
		}
	}
	return false
}

// rebuild turns, under node at key, every object a keyed list pattern
// names back into an array.
func (l Lists) rebuild(node map[string]any, key string) error {
	for name, v := range node {
		child := Child(key, name)
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		member, keyed := l.keyOf(child)
		if !keyed {
			if err := l.rebuild(obj, child); err != nil {
				return err
			}
			continue
		}
		segs := make([]string, 0, len(obj))
		for s := range obj {
			segs = append(segs, s)
		}
		sortElements(segs, member)
		list := make([]any, 0, len(segs))
		if member == ListSet || member == ListAppend {
			for _, s := range segs {
				list = append(list, obj[s])
			}
			node[name] = list
			continue
		}
		for _, s := range segs {
			e, ok := obj[s].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: an element of a keyed list must be an object", Child(child, s))
			}
			k, has := e[member]
			switch {
			case !has:
				e[member] = s
			case fmt.Sprint(k) != s:
				if ks, err := json.Marshal(k); err != nil || string(ks) != s {
					return fmt.Errorf("%s: its %s is %v", Child(child, s), member, k)
				}
			}
			list = append(list, e)
		}
		node[name] = list
	}
	return nil
}

// Removals returns doc, a JSON object, without the elements of its keyed
// lists that ask for their removal ({"name":"k","$patch":"delete"}), and
// the keys of those elements: for a document decoded strictly into a Go
// type, which has no field $patch, the removals are tombstones to add to
// its flattened values.
func (l Lists) Removals(doc []byte) ([]byte, []string, error) {
	if len(l) == 0 || !bytes.Contains(doc, []byte(`"$patch"`)) && !bytes.Contains(doc, []byte(`"`+deleteFromSet)) {
		return doc, nil, nil
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return doc, nil, nil // the decoder reports it
	}
	var removed []string
	var walk func(node map[string]any, key string) error
	walk = func(node map[string]any, key string) error {
		for name, v := range node {
			child := Child(key, name)
			if set, ok := strings.CutPrefix(name, deleteFromSet); ok {
				raw, _ := json.Marshal(v)
				tomb := map[string]string{}
				if member, ok := l.keyOf(Child(key, set)); !ok || member != ListSet {
					return fmt.Errorf("%s: %s names no set", displayKey(child), strconv.Quote(name))
				}
				if err := flattenSet(tomb, Child(key, set), raw, Tombstone); err != nil {
					return err
				}
				if list, ok := node[set].([]any); ok {
					raw, _ := json.Marshal(list)
					given := map[string]string{}
					if flattenSet(given, Child(key, set), raw, "") == nil {
						for k := range tomb {
							if _, both := given[k]; both {
								return fmt.Errorf("%s: %s both gives and removes %s", displayKey(Child(key, set)), strconv.Quote(name), displayKey(k))
							}
						}
					}
				}
				for k := range tomb {
					removed = append(removed, k)
				}
				delete(node, name)
				continue
			}
			switch v := v.(type) {
			case map[string]any:
				if err := walk(v, child); err != nil {
					return err
				}
			case []any:
				member, ok := l.keyOf(child)
				if !ok {
					continue
				}
				kept := v[:0]
				for _, e := range v {
					raw, _ := json.Marshal(e)
					if !removes(raw) {
						kept = append(kept, e)
						continue
					}
					seg, err := elementKey(raw, member)
					if err != nil {
						return fmt.Errorf("%s: %w", child, err)
					}
					removed = append(removed, Child(child, seg))
				}
				node[name] = kept
			}
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return nil, nil, err
	}
	out, err := marshal(root)
	return []byte(out), removed, err
}
