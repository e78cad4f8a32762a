package validation

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/stratacfg/strata/merge"
)

// PathRefs declares path fields the way a component that already lists
// them does (kubelet's KubeletConfigurationPathRefs): refs takes a zero
// object of its type T, a pointer to a struct, and returns pointers to the
// string fields of it that hold paths. Each is found by its address and
// named by the JSON pointer of the field of the same Go name in the
// versioned type into (the merge version), so that an internal type's
// list serves for its versions. The result goes into a Version's Markers.
func PathRefs[T any](refs func(T) []*string, into reflect.Type) (map[string]Marker, error) {
	var zero T
	rt := reflect.TypeOf(zero)
	if rt == nil || rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("validation: PathRefs takes refs of a pointer to a struct, not %v", rt)
	}
	obj := reflect.New(rt.Elem())
	byAddr := map[uintptr][]string{}
	indexFields(obj.Elem(), nil, byAddr)
	for into.Kind() == reflect.Pointer {
		into = into.Elem()
	}
	out := map[string]Marker{}
	for _, p := range refs(obj.Interface().(T)) {
		names, ok := byAddr[reflect.ValueOf(p).Pointer()]
		if !ok {
			return nil, fmt.Errorf("validation: a path reference of %s points outside the object", rt)
		}
		key, err := jsonKey(into, names)
		if err != nil {
			return nil, fmt.Errorf("validation: path field %s of %s: %w", strings.Join(names, "."), rt, err)
		}
		out[key] = Path
	}
	return out, nil
}

// indexFields records the Go field-name path of every string field of v,
// a struct, by address, through nested structs (not through pointers,
// maps or slices: a path reference points into the object itself).
func indexFields(v reflect.Value, path []string, byAddr map[uintptr][]string) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		p := append(append([]string(nil), path...), f.Name)
		switch fv.Kind() {
		case reflect.String:
			byAddr[fv.Addr().Pointer()] = p
		case reflect.Struct:
			indexFields(fv, p, byAddr)
		}
	}
}

// jsonKey turns a Go field-name path into the JSON pointer of the same
// fields in t.
func jsonKey(t reflect.Type, names []string) (string, error) {
	var segs []string
	for _, name := range names {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return "", fmt.Errorf("%s is not a struct in %s", name, t)
		}
		f, ok := t.FieldByName(name)
		if !ok {
			return "", fmt.Errorf("no field %s in %s", name, t)
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			return "", fmt.Errorf("field %s has no JSON name", name)
		case tag == "" && f.Anonymous:
			// inlined: no segment of its own
		case tag == "":
			segs = append(segs, name)
		default:
			segs = append(segs, tag)
		}
		t = f.Type
	}
	return merge.Pointer(segs...), nil
}
