// Package typed knows the Go type of a versioned configuration document:
// the type at a key, string values (ConfigMap data, flag values) converted
// to JSON by that type, and a decoded document changed field by field. It
// serves package validation and strata's loaders; the memo tables it keeps
// per type are shared by everything that converts values of that type.
package typed

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	kjson "sigs.k8s.io/json"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/merge"
)

// Type knows the Go type of a versioned document and answers, for a key,
// what type lives there. It turns string values (ConfigMap data, flag
// values) into JSON by that type; values for structs, maps and slices may
// be written as YAML (strict: no duplicate keys). A Type is safe for
// concurrent use.
type Type struct {
	root reflect.Type
	// yamlToJSON parses YAML for values whose type is a struct, map or
	// slice; nil means such values must be JSON.
	yamlToJSON func([]byte) ([]byte, error)

	// How the document's top-level members are converted and set, worked
	// out once, on first use: every ConfigMap key is one of them.
	topOnce sync.Once
	top     map[string]*member // by key
	byName  map[string]*member // by member name
}

// member is what Convert and Set need of a top-level member.
type member struct {
	key  string
	conv converter
	set  *setPlan
	// last is the last string converted and its JSON: the same
	// ConfigMap value is converted again on every rebuild.
	last atomic.Pointer[[2]string]
}

// members returns the Type's top-level members by key.
func (s *Type) members() map[string]*member {
	s.topOnce.Do(func() {
		s.top, s.byName = map[string]*member{}, map[string]*member{}
		if s.root.Kind() != reflect.Struct || hasCustomJSON(s.root) {
			return
		}
		paths := map[string][][]int{}
		jsonFields(s.root, paths)
		for name, f := range fieldsOf(s.root) {
			key := merge.Pointer(name)
			t := deref(f.Type)
			m := &member{key: key, conv: converter{t: t, kind: convKindOf(t)}, set: s.newPlan(paths[name])}
			s.top[key], s.byName[name] = m, m
		}
	})
	return s.top
}

// ConvertMember is Convert for the top-level member name, a ConfigMap
// key: it returns the member's JSON pointer and the value as JSON, and
// its error names the key as the ConfigMap holds it. It allocates nothing
// when the value is the one the member converted last.
func (s *Type) ConvertMember(name, value string) (key, out string, err error) {
	s.members()
	m, ok := s.byName[name]
	if !ok {
		return merge.Pointer(name), "", fmt.Errorf("key %q: no such field", name)
	}
	out, err = m.convert(s, name, value)
	return m.key, out, err
}

// convert converts value for m, through its memo; its error names m as
// name.
func (m *member) convert(s *Type, name, value string) (string, error) {
	if last := m.last.Load(); last != nil && last[0] == value {
		return last[1], nil
	}
	out, err := s.convert(m.conv, value)
	if err != nil {
		return "", fmt.Errorf("key %q: %s %w", name, text.Quote(value), err)
	}
	m.last.Store(&[2]string{value, out})
	return out, nil
}

var types sync.Map // reflect.Type → *Type

// yamlToJSONStrict converts a structured value, its aliases bounded to
// four times its size and 64 KiB: a tenant's value must not expand to
// gigabytes, nor a ConfigMap of many small values to a megabyte each.
func yamlToJSONStrict(data []byte) ([]byte, error) {
	return yamljson.ToJSONStrict(data, 4*len(data)+64<<10)
}

// For returns the Type of the document type t (a struct or a pointer to
// one). There is one Type per Go type, shared.
func For(t reflect.Type) *Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v, ok := types.Load(t); ok {
		return v.(*Type)
	}
	v, _ := types.LoadOrStore(t, &Type{root: t, yamlToJSON: yamlToJSONStrict})
	return v.(*Type)
}

// At returns the Go type at key, pointers removed. It reports false when
// the key names no field: an unknown member, or a segment below a leaf.
// The segment below a keyed list is an element's key: the element type.
// Keys under an interface or json.RawMessage value are accepted as free-form
// and reported with that type.
func (s *Type) At(key string) (reflect.Type, bool) {
	segs, ok := merge.Segments(key)
	if !ok {
		return nil, false
	}
	t := s.root
	keyed := false // t is a keyed list: the next segment is an element's key
	for _, seg := range segs {
		t = deref(t)
		switch {
		case keyed:
			t, keyed = t.Elem(), false
		case isFreeForm(t):
			return t, true
		case t.Kind() == reflect.Struct && !hasCustomJSON(t):
			f, ok := fieldsOf(t)[seg]
			if !ok {
				return nil, false
			}
			t = f.Type
			_, keyed = listKey(f)
		case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
			t = t.Elem()
		default:
			return nil, false
		}
	}
	return deref(t), true
}

// Convert turns the string value s set for key into JSON text by the type at
// key: booleans, integers (range checked), floats and strings directly;
// types with a Set(string) method (flag values), encoding.TextUnmarshaler or
// json.Unmarshaler (durations, quantities) through those methods; structs,
// maps and slices parsed as YAML or JSON and checked against the type. The
// error names the key and says what was expected.
func (s *Type) Convert(key, value string) (string, error) {
	if m, ok := s.members()[key]; ok {
		return m.convert(s, key, value)
	}
	c, ok := s.converterOf(key)
	if !ok {
		return "", fmt.Errorf("key %q: no such field", key)
	}
	out, err := s.convert(c, value)
	if err != nil {
		return "", fmt.Errorf("key %q: %s %w", key, text.Quote(value), err)
	}
	return out, nil
}

var (
	setterType    = reflect.TypeFor[interface{ Set(string) error }]()
	textUnmarshal = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshal = reflect.TypeFor[json.Unmarshaler]()
	rawMessage    = reflect.TypeFor[json.RawMessage]()
)

// convKind is how a string value becomes JSON for a type.
type convKind int

const (
	convSetter convKind = iota // Set(string), as flag values
	convJSON                   // json.Unmarshaler: durations, quantities
	convText                   // encoding.TextUnmarshaler
	convBool
	convInt
	convUint
	convFloat
	convString
	convStructured // structs, maps, slices: YAML or JSON
)

// converter is how the values of one key are converted.
type converter struct {
	t    reflect.Type
	kind convKind
}

// converterOf returns the converter of key. Those of top-level members
// (every ConfigMap key) are worked out once, so a ConfigMap is converted
// without reflecting on its type again; deeper keys, whose number map
// fields leave open, are worked out on each call.
func (s *Type) converterOf(key string) (converter, bool) {
	if m, ok := s.members()[key]; ok {
		return m.conv, true
	}
	t, ok := s.At(key)
	if !ok {
		return converter{}, false
	}
	return converter{t: t, kind: convKindOf(t)}, true
}

func convKindOf(t reflect.Type) convKind {
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(setterType) && t.Kind() != reflect.Interface:
		return convSetter
	case pt.Implements(jsonUnmarshal):
		return convJSON
	case pt.Implements(textUnmarshal):
		return convText
	}
	return basicKind(t)
}

// basicKind is the convKind of t by its kind alone: a boolean, an integer,
// a float, a string, or structured.
func basicKind(t reflect.Type) convKind {
	switch t.Kind() {
	case reflect.Bool:
		return convBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return convInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return convUint
	case reflect.Float32, reflect.Float64:
		return convFloat
	case reflect.String:
		return convString
	}
	return convStructured
}

func (s *Type) convert(c converter, value string) (string, error) {
	t := c.t
	switch c.kind {
	case convSetter:
		v := reflect.New(t)
		if err := v.Interface().(interface{ Set(string) error }).Set(value); err != nil {
			return "", fmt.Errorf("is not a valid %s: %v", t, err)
		}
		return marshal(v.Interface())
	case convJSON:
		// Durations, quantities and the like take a JSON string; others
		// may take any JSON, so fall back to the value as YAML or JSON.
		v := reflect.New(t)
		if err := v.Interface().(json.Unmarshaler).UnmarshalJSON([]byte(jsonString(value))); err == nil {
			return marshalCompact(v.Interface())
		}
		return s.structured(t, value)
	case convText:
		v := reflect.New(t)
		if err := v.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(value)); err != nil {
			return "", fmt.Errorf("is not a valid %s: %v", t, err)
		}
		return marshal(v.Interface())
	case convBool:
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return "", fmt.Errorf("is not a boolean (true or false)")
		}
		return strconv.FormatBool(b), nil
	case convInt:
		value = strings.TrimSpace(value)
		n, err := strconv.ParseInt(value, 10, t.Bits())
		if err != nil {
			return "", fmt.Errorf("is not an integer that fits in %d bits", t.Bits())
		}
		if canonicalInteger(value) {
			return value, nil
		}
		return strconv.FormatInt(n, 10), nil
	case convUint:
		value = strings.TrimSpace(value)
		n, err := strconv.ParseUint(value, 10, t.Bits())
		if err != nil {
			return "", fmt.Errorf("is not a non-negative integer that fits in %d bits", t.Bits())
		}
		if canonicalInteger(value) {
			return value, nil
		}
		return strconv.FormatUint(n, 10), nil
	case convFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(value), t.Bits())
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("is not a finite number that fits in a float%d", t.Bits())
		}
		return strconv.FormatFloat(f, 'g', -1, t.Bits()), nil
	case convString:
		return jsonString(value), nil
	}
	return s.structured(t, value)
}

// canonicalInteger reports whether s is an integer written as
// strconv.FormatInt writes it: no sign but "-", no leading zero, no "-0".
func canonicalInteger(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || (d[0] == '0' && (len(d) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// jsonString returns s as a JSON string, as marshal writes it.
func jsonString(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			out, _ := marshal(s)
			return out
		}
	}
	return `"` + s + `"`
}

// structured parses value as YAML (or JSON) and checks it decodes into t.
func (s *Type) structured(t reflect.Type, value string) (string, error) {
	data := []byte(value)
	if s.yamlToJSON != nil {
		j, err := s.yamlToJSON(data)
		if err != nil {
			return "", fmt.Errorf("is not valid YAML: %v", err)
		}
		data = j
	}
	if err := strictUnmarshal(data, reflect.New(t).Interface()); err != nil {
		return "", fmt.Errorf("is not a valid %s: %v", describe(t), err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return "", fmt.Errorf("is not valid JSON: %v", err)
	}
	return buf.String(), nil
}

// strictUnmarshal decodes data as apimachinery's strict decoder does:
// member names case-sensitive, none unknown or given twice.
func strictUnmarshal(data []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(data, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func marshal(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// marshalCompact is marshal, taking a value's own MarshalJSON output as it
// is when marshal would not change it: valid, with no whitespace to
// compact.
func marshalCompact(v any) (string, error) {
	if m, ok := v.(json.Marshaler); ok {
		if out, err := m.MarshalJSON(); err == nil && !bytes.ContainsAny(out, " \t\r\n") && json.Valid(out) {
			return string(out), nil
		}
	}
	return marshal(v)
}

func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Map:
		return "map of " + describe(t.Elem())
	case reflect.Slice, reflect.Array:
		return "list of " + describe(t.Elem())
	case reflect.Pointer:
		return describe(t.Elem())
	}
	return t.String()
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func isFreeForm(t reflect.Type) bool {
	return t.Kind() == reflect.Interface || t == rawMessage
}

// hasCustomJSON reports whether a struct type decodes itself, so that its
// JSON members are not its Go fields (metav1.Duration, resource.Quantity).
func hasCustomJSON(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonUnmarshal) || pt.Implements(textUnmarshal)
}

// Walk calls fn for every field of the document reachable through structs
// and maps, with its key and its struct field: a struct member's key is its
// JSON pointer, a map's values share the key parent+"/*" and the map's
// field. Walk does not descend into slices (arrays are leaves), free-form
// values, or types that decode themselves. Members are visited in sorted
// order; returning false skips what is under a field.
func (s *Type) Walk(fn func(key string, f reflect.StructField) bool) {
	walk(s.root, "", fn, map[reflect.Type]bool{})
}

func walk(t reflect.Type, prefix string, fn func(string, reflect.StructField) bool, seen map[reflect.Type]bool) {
	t = deref(t)
	if t.Kind() != reflect.Struct || hasCustomJSON(t) || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	fields := fieldsOf(t)
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := fields[n]
		key := merge.Child(prefix, n)
		if !fn(key, f) {
			continue
		}
		ft := deref(f.Type)
		switch {
		case isFreeForm(ft):
		case ft.Kind() == reflect.Struct:
			walk(ft, key, fn, seen)
		case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String:
			mf := f
			mf.Type = ft.Elem()
			if fn(key+"/*", mf) {
				walk(ft.Elem(), key+"/*", fn, seen)
			}
		}
	}
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

// fieldsOf maps the JSON member names of struct type t to their types,
// following encoding/json's rules for tags and embedded structs: of
// fields of one name, the shallowest.
func fieldsOf(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := map[string]reflect.StructField{}
	collectFields(t, m)
	fieldCache.Store(t, m)
	return m
}

func collectFields(t reflect.Type, m map[string]reflect.StructField) {
	for name, h := range shallowest(t) {
		m[name] = h.f
	}
}

// memberField is the field a JSON member decodes into, its index path,
// whether its tag names it, and whether another as shallow ties with it.
type memberField struct {
	index             []int
	f                 reflect.StructField
	tagged, ambiguous bool
}

// shallowest returns, for each JSON member of struct type t, the field
// encoding/json decodes it into: of fields of one name, the shallowest;
// of several as shallow, the one whose tag names it, or none.
func shallowest(t reflect.Type) map[string]memberField {
	out := map[string]memberField{}
	eachMember(t, nil, false, func(name string, index []int, f reflect.StructField, _ bool) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		h, seen := out[name]
		switch {
		case !seen || len(index) < len(h.index) || len(index) == len(h.index) && tag != "" && !h.tagged:
			out[name] = memberField{index: index, f: f, tagged: tag != ""}
		case len(index) == len(h.index) && (tag != "") == h.tagged:
			h.ambiguous = true
			out[name] = h
		}
	})
	for name, h := range out {
		if h.ambiguous {
			delete(out, name)
		}
	}
	return out
}

// Members calls fn for every JSON member of struct type t, by the rules
// Walk, Set and Flatten follow (encoding/json's), in the order of t's
// fields: the member's name, the struct type that declares its field (t,
// or a struct t embeds), and the field; of fields of one name, the
// shallowest, as in fieldsOf.
func Members(t reflect.Type, fn func(name string, owner reflect.Type, f reflect.StructField)) {
	t = deref(t)
	won := shallowest(t)
	eachMember(t, nil, false, func(name string, index []int, f reflect.StructField, _ bool) {
		if !slices.Equal(won[name].index, index) {
			return
		}
		owner := t
		for _, i := range index[:len(index)-1] {
			owner = deref(owner.Field(i).Type)
		}
		fn(name, owner, f)
	})
}

// eachMember calls fn for every JSON member of struct type t, following
// encoding/json's rules for tags and embedded structs (a field tagged
// ",inline" is inlined only when embedded, as encoding/json and
// sigs.k8s.io/json read it): the member's name, the index path of its
// field from t, the field, and whether the path goes through an embedded
// pointer.
func eachMember(t reflect.Type, prefix []int, viaPointer bool, fn func(name string, index []int, f reflect.StructField, viaPointer bool)) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		index := append(slices.Clip(prefix), i)
		if ft := deref(f.Type); name == "" && f.Anonymous && ft.Kind() == reflect.Struct {
			eachMember(ft, index, viaPointer || f.Type.Kind() == reflect.Pointer, fn)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fn(name, index, f, viaPointer)
	}
}

// Root returns the document's Go type, pointers removed.
func (s *Type) Root() reflect.Type { return s.root }
