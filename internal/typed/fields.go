package typed

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/stratacfg/strata/merge"
)

// FieldAt is a field of a struct value: its Go field-name path and type.
type FieldAt struct {
	Names []string
	Type  reflect.Type
}

// Addresses records every exported field of v, a struct, by address,
// through nested structs (not through pointers, maps or slices), outer
// fields first: a struct and its first field share an address. It finds
// the field a pointer into v points at: a path reference, a flag's
// target.
func Addresses(v reflect.Value) map[uintptr][]FieldAt {
	out := map[uintptr][]FieldAt{}
	addresses(v, nil, out)
	return out
}

func addresses(v reflect.Value, path []string, out map[uintptr][]FieldAt) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fv := v.Field(i)
		p := append(append([]string(nil), path...), sf.Name)
		addr := fv.Addr().Pointer()
		out[addr] = append(out[addr], FieldAt{Names: p, Type: sf.Type})
		if fv.Kind() == reflect.Struct {
			addresses(fv, p, out)
		}
	}
}

// KeyOf returns the JSON pointer of the fields named by a Go field-name
// path in t, a struct type (or a pointer to one): the same fields of
// another version of a type map to its JSON names. A struct embedded
// without a JSON name adds no segment (a named field tagged ",inline" is
// not inlined: the decoder reads it by its name); the fields inside a
// type that encodes itself (a duration) are that type's key.
func KeyOf(t reflect.Type, names []string) (string, error) {
	var segs []string
	for _, name := range names {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if len(segs) > 0 && hasCustomJSON(t) {
			break // a value that encodes itself (a duration): a leaf, whatever is inside
		}
		if t.Kind() != reflect.Struct {
			return "", fmt.Errorf("%s is not a struct in %s", name, t)
		}
		sf, ok := t.FieldByName(name)
		if !ok {
			return "", fmt.Errorf("no field %s in %s", name, t)
		}
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			return "", fmt.Errorf("field %s has no JSON name", name)
		case tag == "" && sf.Anonymous && deref(sf.Type).Kind() == reflect.Struct: // inlined, ",inline" or not, as eachMember reads it
		case tag == "":
			segs = append(segs, name)
		default:
			segs = append(segs, tag)
		}
		t = sf.Type
	}
	if len(segs) == 0 {
		return "", fmt.Errorf("%s names no member", strings.Join(names, "."))
	}
	return merge.Pointer(segs...), nil
}
