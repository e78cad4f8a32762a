package typed

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/stratacfg/strata/merge"
)

// ListKeyTag is the option of the strata struct tag that makes a slice of
// structs a keyed list, merged per element as server-side apply merges a
// +listType=map list: `strata:"list-map-key=name"`.
const ListKeyTag = "list-map-key="

// ListTypeTag is the option of the strata struct tag that gives a slice
// whose elements have no key a strategy other than replace:
// `strata:"list-type=set"` (a slice of scalars merged as a set, as
// server-side apply merges a +listType=set list) or
// `strata:"list-type=append"` (lower layers' elements first).
const ListTypeTag = "list-type="

// listKey returns what f's tag declares for its slice: the key member of
// a keyed list, or merge.ListSet or merge.ListAppend; false when it
// declares none, or declares it of what is no slice.
func listKey(f reflect.StructField) (string, bool) {
	if deref(f.Type).Kind() != reflect.Slice {
		return "", false
	}
	for _, opt := range strings.Split(f.Tag.Get("strata"), ",") {
		opt = strings.TrimSpace(opt)
		if k, ok := strings.CutPrefix(opt, ListKeyTag); ok && k != "" {
			return k, true
		}
		switch t, _ := strings.CutPrefix(opt, ListTypeTag); {
		case !strings.HasPrefix(opt, ListTypeTag):
		case t == "set":
			return merge.ListSet, true
		case t == "append":
			return merge.ListAppend, true
		}
	}
	return "", false
}

var (
	listsCache sync.Map // reflect.Type → merge.Lists
	declaredMu sync.Mutex
	declared   = map[reflect.Type]merge.Lists{}
)

// Lists returns the lists of the document that merge per element, by
// key pattern: every slice field tagged list-map-key (its key member) or
// list-type (merge.ListSet, merge.ListAppend), a map's values as "*",
// and those Declare added.
func (s *Type) Lists() merge.Lists {
	if v, ok := listsCache.Load(s.root); ok {
		return v.(merge.Lists)
	}
	// Under the lock Declare takes, so that no list it adds is cached
	// away.
	declaredMu.Lock()
	defer declaredMu.Unlock()
	if v, ok := listsCache.Load(s.root); ok {
		return v.(merge.Lists)
	}
	lists := s.tagged()
	for p, m := range declared[s.root] {
		if lists == nil {
			lists = merge.Lists{}
		}
		lists[p] = m
	}
	listsCache.Store(s.root, lists)
	return lists
}

// tagged returns the lists the document's struct tags declare.
func (s *Type) tagged() merge.Lists {
	lists := merge.Lists{}
	s.Walk(func(key string, f reflect.StructField) bool {
		if k, ok := listKey(f); ok && !strings.HasSuffix(key, "/*") {
			lists[key] = k
		}
		return true
	})
	if len(lists) == 0 {
		return nil
	}
	return lists
}

// Declare adds to the lists of root's document those its fields' tags
// cannot declare, because the caller does not own their types (kubelet's
// +listType=set fields): key pattern → key member, merge.ListSet or
// merge.ListAppend. A pattern that is no slice field, a set of what are
// not scalars, and one declared otherwise before or by a tag are errors.
// It is meant for a configuration kind's construction, before its lists
// are read.
func Declare(root reflect.Type, lists merge.Lists) error {
	if len(lists) == 0 {
		return nil
	}
	t := For(root)
	tags := t.tagged()
	declaredMu.Lock()
	defer declaredMu.Unlock()
	var errs []string
	for _, p := range slices.Sorted(maps.Keys(lists)) {
		m := lists[p]
		ft, ok := t.At(strings.ReplaceAll(p, "*", "x"))
		switch {
		case !ok || deref(ft).Kind() != reflect.Slice:
			errs = append(errs, fmt.Sprintf("%s is no slice field of %s", p, root))
		case m == merge.ListSet && (!Scalar(deref(deref(ft).Elem())) || deref(ft).Elem().Kind() == reflect.Uint8):
			errs = append(errs, fmt.Sprintf("%s: a set holds strings, numbers or booleans, and its elements are %s", p, deref(ft).Elem()))
		case tags[p] != "" && tags[p] != m, declared[t.root][p] != "" && declared[t.root][p] != m:
			errs = append(errs, fmt.Sprintf("%s is declared %s and %s", p, merge.ListStrategy(m), merge.ListStrategy(cmp.Or(tags[p], declared[t.root][p]))))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("lists: %s", strings.Join(errs, "; "))
	}
	if declared[t.root] == nil {
		declared[t.root] = merge.Lists{}
	}
	maps.Copy(declared[t.root], lists)
	listsCache.Delete(t.root)
	return nil
}

// Scalar reports whether t encodes as a JSON string, number or boolean.
// (A slice of bytes is one string, no list of numbers.)
func Scalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// Flatten is merge.Flatten with the document's keyed lists.
func (s *Type) Flatten(doc []byte) (map[string]string, error) { return s.Lists().Flatten(doc) }

// Unflatten is merge.Unflatten with the document's keyed lists.
func (s *Type) Unflatten(values map[string]string) ([]byte, error) {
	return s.Lists().Unflatten(values)
}

// FlattenObject is Flatten of obj, a pointer to a value of the Type's
// type, as encoding/json writes it, without writing what makes that slow:
// a member of the document that is a map of scalars (feature gates) is
// flattened entry by entry, and only the rest is written and flattened.
// A map of a quarter of a million entries costs one pass over them
// instead of a sort, an encoding and a scan.
func (s *Type) FlattenObject(obj any) (map[string]string, error) {
	v := reflect.ValueOf(obj)
	scalar := s.scalarMaps()
	slow := func() (map[string]string, error) {
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		return s.Flatten(raw)
	}
	if len(scalar) == 0 || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Type() != s.root {
		return slow()
	}
	rest := reflect.New(s.root)
	rest.Elem().Set(v.Elem()) // a shallow copy, whose maps are emptied
	n := 0
	for _, m := range scalar {
		n += rest.Elem().FieldByIndex(m.index).Len()
	}
	out := make(map[string]string, n+16)
	for _, m := range scalar {
		f := rest.Elem().FieldByIndex(m.index)
		if f.IsNil() {
			continue // encoding/json writes null, or nothing
		}
		prefix := merge.Pointer(m.name)
		for it := f.MapRange(); it.Next(); {
			key := it.Key().String()
			if !utf8.ValidString(key) {
				return slow() // encoding/json would write U+FFFD in its place
			}
			out[merge.Child(prefix, key)] = scalarJSON(it.Value())
		}
		f.Set(reflect.MakeMap(f.Type()))
	}
	raw, err := json.Marshal(rest.Interface())
	if err != nil {
		return nil, err
	}
	others, err := s.Flatten(raw)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, others)
	return out, nil
}

// scalarMap is a member of the document that is a map of scalars.
type scalarMap struct {
	name  string
	index []int
}

var scalarMapsCache sync.Map // reflect.Type → []scalarMap

// scalarMaps returns the members of the document whose type is a map
// from string to a bool, an integer or a string that encode themselves no
// other way, and that encoding/json writes where eachMember says: named
// once, in a field of the document or of a struct it embeds by value.
func (s *Type) scalarMaps() []scalarMap {
	if v, ok := scalarMapsCache.Load(s.root); ok {
		return v.([]scalarMap)
	}
	var out []scalarMap
	if s.root.Kind() == reflect.Struct && !customJSON(s.root) { // one that writes itself (a method it embeds included) is written whole
		named := map[string]int{}
		eachMember(s.root, nil, false, func(name string, _ []int, _ reflect.StructField, _ bool) { named[name]++ })
		eachMember(s.root, nil, false, func(name string, index []int, f reflect.StructField, viaPointer bool) {
			t := f.Type
			if named[name] > 1 || viaPointer || !embeddedOnly(s.root, index) || t.Kind() != reflect.Map || t.Key().Kind() != reflect.String || customJSON(t) || customJSON(t.Key()) || customJSON(t.Elem()) || strings.Contains(f.Tag.Get("json"), ",string") {
				return
			}
			switch t.Elem().Kind() {
			case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				out = append(out, scalarMap{name: name, index: index})
			}
		})
	}
	v, _ := scalarMapsCache.LoadOrStore(s.root, out)
	return v.([]scalarMap)
}

// embeddedOnly reports whether the field at index in t is reached through
// embedded structs alone, which encoding/json writes inline as eachMember
// does (a named field tagged ",inline" it does not).
func embeddedOnly(t reflect.Type, index []int) bool {
	for _, i := range index[:len(index)-1] {
		f := t.Field(i)
		if !f.Anonymous || f.Tag.Get("json") != "" && !strings.HasPrefix(f.Tag.Get("json"), ",") {
			return false
		}
		t = deref(f.Type)
	}
	return true
}

// customJSON reports whether t, or a pointer to it, writes itself.
func customJSON(t reflect.Type) bool {
	for _, tt := range []reflect.Type{t, reflect.PointerTo(t)} {
		if tt.Implements(jsonMarshaler) || tt.Implements(textMarshaler) {
			return true
		}
	}
	return false
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// scalarJSON is v, a bool, an integer or a string, as encoding/json
// writes it.
func scalarJSON(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.String:
		str := v.String()
		for i := 0; i < len(str); i++ {
			if c := str[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				b, _ := json.Marshal(str)
				return string(b)
			}
		}
		return `"` + str + `"`
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	return strconv.FormatUint(v.Uint(), 10)
}
