package validation

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/stratacfg/strata/internal/typed"
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
	byAddr := typed.Addresses(obj.Elem())
	out := map[string]Marker{}
	for _, p := range refs(obj.Interface().(T)) {
		var names []string
		for _, f := range byAddr[reflect.ValueOf(p).Pointer()] {
			if f.Type.Kind() == reflect.String {
				names = f.Names
			}
		}
		if names == nil {
			return nil, fmt.Errorf("validation: a path reference of %s points at no string field of it", rt)
		}
		key, err := typed.KeyOf(into, names)
		if err != nil {
			return nil, fmt.Errorf("validation: path field %s of %s: %w", strings.Join(names, "."), rt, err)
		}
		out[key] = Path
	}
	return out, nil
}
