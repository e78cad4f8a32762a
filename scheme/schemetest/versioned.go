package schemetest

import (
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/scheme"
)

// CheckVersioned fails t for every field of every version of k whose type
// is unversioned: a type of the kind's internal version (when its hub is
// runtime.APIVersionInternal), or of any package under an "internal"
// directory other than the version's own. A versioned type is a contract
// written to files; a type it borrows from an internal package changes
// whenever that package does, and the file's meaning with it. Call it from
// a test of the kind, beside CheckEmpty.
func CheckVersioned(t TB, k *scheme.Kind) {
	t.Helper()
	hubPkg := ""
	if k.Hub().Version == runtime.APIVersionInternal {
		if obj, err := k.New(k.Hub()); err == nil {
			hubPkg = reflect.TypeOf(obj).Elem().PkgPath()
		}
	}
	for _, v := range k.Versions() {
		gv := k.Preferred()
		gv.Version = v.Version
		obj, err := k.New(gv)
		if err != nil {
			continue // a version that holds other kinds of the group
		}
		root := reflect.TypeOf(obj).Elem()
		own := root.PkgPath()
		seen := map[reflect.Type]bool{}
		var walk func(rt reflect.Type, at string)
		walk = func(rt reflect.Type, at string) {
			for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Array || rt.Kind() == reflect.Map {
				rt = rt.Elem()
			}
			if p := rt.PkgPath(); p != "" && p != own && (p == hubPkg || underInternal(p)) {
				t.Errorf("field %s of %s has type %s from %s, which is not versioned: give the version a type of its own", at, gv, rt, p)
				return
			}
			if rt.Kind() != reflect.Struct || seen[rt] {
				return
			}
			seen[rt] = true
			for i := range rt.NumField() {
				f := rt.Field(i)
				name := f.Name
				if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
					name = tag
				}
				walk(f.Type, at+"/"+name)
			}
		}
		walk(root, "")
	}
}

// underInternal reports whether the package path p has an "internal"
// element, which Go keeps from importers outside its parent.
func underInternal(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "internal")
}
