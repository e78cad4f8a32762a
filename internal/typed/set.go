package typed

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	kjson "sigs.k8s.io/json"

	"github.com/stratacfg/strata/merge"
)

// ErrNotSettable is returned by Set for a key or value it does not set
// itself; decoding a whole document handles it instead.
var ErrNotSettable = errors.New("not settable field by field")

// Set sets the field that key names in dst, a pointer to a value of the
// Type's type, as decoding a document whose member key holds value
// would: the field is replaced, and the tombstone zeroes the field, as if
// the key were absent. A nil pointer field gets a new value; through one
// that is not nil the value is replaced in place, so dst must own what
// its pointers point to, as a deep copy does. It is how a decoded
// configuration takes a change of a few keys without decoding everything
// again.
//
// Set handles what it can do exactly and nothing else: a key of one
// segment naming a field of the document's struct (or of a struct it
// embeds by value), holding JSON of the field's type. A boolean, a number,
// a string or a type that decodes itself from JSON (durations,
// quantities) is set directly; anything else (a map, a list, a struct) is
// decoded as apimachinery's strict decoder decodes that member of a
// document (sigs.k8s.io/json: case-sensitive, no unknown or duplicate
// fields), and one that would not decode strictly is not set. Everything
// else returns an error matching ErrNotSettable, and dst may have been
// changed: callers decode the whole document instead. Set is safe for
// concurrent use on different values.
func (s *Type) Set(dst any, key, value string) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Type() != s.root {
		return errNotSettable(key, "the value is not a pointer to the schema's type")
	}
	p := s.plan(key)
	if p.why != "" {
		return errNotSettable(key, p.why)
	}
	f := v.Elem().FieldByIndex(p.index)
	if value == merge.Tombstone {
		f.SetZero()
		return nil
	}
	if f.Kind() == reflect.Pointer && p.leaf == convStructured {
		// Decoded into the pointer itself: null, however spaced, leaves
		// it nil, as in a document; any other value fills the pointee,
		// zeroed first, or a new one.
		if !f.IsNil() {
			f.Elem().SetZero()
		}
		if err := setLeaf(f, convStructured, value); err != nil {
			return errNotSettable(key, err.Error())
		}
		return nil
	}
	if f.Kind() == reflect.Pointer {
		if !f.IsNil() {
			e := f.Elem()
			e.SetZero()
			if err := p.setLeaf(e, value); err != nil {
				return errNotSettable(key, err.Error())
			}
			return nil
		}
		n := reflect.New(f.Type().Elem())
		if err := p.setLeaf(n.Elem(), value); err != nil {
			return errNotSettable(key, err.Error())
		}
		f.Set(n)
		return nil
	}
	f.SetZero()
	if err := p.setLeaf(f, value); err != nil {
		return errNotSettable(key, err.Error())
	}
	return nil
}

// setLeaf sets v, a zero value, from the JSON text value. A type that
// decodes itself and holds no pointers keeps a copy of the value it
// decoded last, since decoding it (a duration: json.Unmarshal of a string,
// then parsing) costs more than the rest of a Set.
func (p *setPlan) setLeaf(v reflect.Value, value string) error {
	if !p.memo {
		return setLeaf(v, p.leaf, value)
	}
	if last := p.last.Load(); last != nil && last.text == value {
		v.Set(last.value)
		return nil
	}
	if err := setLeaf(v, p.leaf, value); err != nil {
		return err
	}
	keep := reflect.New(v.Type()).Elem()
	keep.Set(v)
	p.last.Store(&decoded{text: value, value: keep})
	return nil
}

// decoded is a JSON text and the value it decodes to.
type decoded struct {
	text  string
	value reflect.Value
}

func errNotSettable(key, why string) error {
	return &settableError{key: key, why: why}
}

type settableError struct{ key, why string }

func (e *settableError) Error() string {
	return "key " + strconv.Quote(e.key) + ": " + ErrNotSettable.Error() + ": " + e.why
}

func (e *settableError) Unwrap() error { return ErrNotSettable }

// setPlan is how Set reaches and sets the field of one key: the index path
// through the document's struct, or why it cannot.
type setPlan struct {
	index []int
	leaf  convKind // one of the kinds leafKindOf accepts
	why   string
	memo  bool // keep the last value decoded; see setLeaf
	last  atomic.Pointer[decoded]
}

func (s *Type) plan(key string) *setPlan {
	if m, ok := s.members()[key]; ok {
		return m.set
	}
	return &setPlan{why: "only keys naming a member of the document are set field by field"}
}

// newPlan works out the plan of a member carried by the fields at found,
// the index paths jsonFields recorded for its name.
func (s *Type) newPlan(found [][]int) *setPlan {
	switch {
	case len(found) == 0:
		return &setPlan{why: "no such field"}
	case len(found) > 1:
		return &setPlan{why: "more than one field has this name"}
	}
	f := s.root.FieldByIndex(found[0])
	if _, opts, _ := strings.Cut(f.Tag.Get("json"), ","); strings.Contains(","+opts+",", ",string,") {
		return &setPlan{why: "the field is encoded as a string"}
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	leaf, ok := leafKindOf(t)
	if !ok {
		return &setPlan{why: "the field holds " + t.String() + ", which is decoded as part of the document"}
	}
	return &setPlan{index: found[0], leaf: leaf, memo: leaf == convJSON && pointerFree(t)}
}

// pointerFree reports whether a value of type t holds no pointer, map,
// slice, channel, function or interface: a copy of it shares nothing.
func pointerFree(t reflect.Type) bool { return holdsNoPointer(t, true) }

// noPointers reports whether a value of type t holds no pointer at all,
// strings included: it can be copied as bytes.
func noPointers(t reflect.Type) bool { return holdsNoPointer(t, false) }

func holdsNoPointer(t reflect.Type, stringsToo bool) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.String:
		return stringsToo
	case reflect.Array:
		return holdsNoPointer(t.Elem(), stringsToo)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !holdsNoPointer(t.Field(i).Type, stringsToo) {
				return false
			}
		}
		return true
	}
	return false
}

// leafKindOf says how a value of type t is set: convJSON, the basic kind
// of a boolean, number or string, or convStructured for the rest. It
// reports false for the types Set leaves to a whole decode.
func leafKindOf(t reflect.Type) (convKind, bool) {
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(jsonUnmarshal):
		return convJSON, true
	case pt.Implements(textUnmarshal):
		return 0, false
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return 0, false
	}
	return basicKind(t), true
}

// jsonFields records, for every JSON member name of struct t, the index
// paths of the fields that carry it. A member of a struct embedded through
// a pointer is recorded as ambiguous, so that it is never set: decoding
// allocates the pointer only when a member is present, which Set cannot
// mirror for a tombstone.
func jsonFields(t reflect.Type, out map[string][][]int) {
	eachMember(t, nil, false, func(name string, index []int, _ reflect.StructField, viaPointer bool) {
		if viaPointer {
			out[name] = append(out[name], nil, nil)
			return
		}
		out[name] = append(out[name], index)
	})
}

// setLeaf decodes the JSON text value into v, an addressable zero value of
// a type leafKindOf accepted as kind.
func setLeaf(v reflect.Value, kind convKind, value string) error {
	switch kind {
	case convBool:
		switch value {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			return errors.New("not a JSON boolean")
		}
	case convInt:
		n, err := strconv.ParseInt(value, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case convUint:
		n, err := strconv.ParseUint(value, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetUint(n)
	case convFloat:
		if len(value) == 0 || value[0] == '+' || value[0] == '.' || strings.ContainsAny(value, "_xXnNiI") {
			return errors.New("not a JSON number")
		}
		f, err := strconv.ParseFloat(value, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case convString:
		if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' || strings.IndexByte(value, '\\') >= 0 || !utf8.ValidString(value) {
			// Decoding would unescape, or replace invalid UTF-8.
			return errors.New("not a JSON string of valid UTF-8 without escapes")
		}
		v.SetString(value[1 : len(value)-1])
	case convJSON:
		return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON([]byte(value))
	case convStructured:
		strict, err := kjson.UnmarshalStrict([]byte(value), v.Addr().Interface(), kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil {
			return err
		}
		if len(strict) > 0 {
			return fmt.Errorf("does not decode strictly: %v", errors.Join(strict...))
		}
	}
	return nil
}
