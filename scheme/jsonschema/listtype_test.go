package jsonschema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stratacfg/strata/internal/testkind/upstreams"
	"github.com/stratacfg/strata/scheme"
)

// TestListTypeMarkersAgree: where a field's doc gives +listType, the
// schema is written only when strata merges the list so: a set as a set,
// a map by a key member, atomic as a whole (or appended); otherwise the
// error names the field and the tag to give it.
func TestListTypeMarkersAgree(t *testing.T) {
	kind, err := scheme.New(upstreams.Config())
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[upstreams.Upstreams]()
	docs := func(field, marker string) *Docs {
		return &Docs{fields: map[string]fieldDoc{typ.PkgPath() + "." + typ.Name() + "." + field: parseDoc("A field.\n+listType=" + marker + "\n")}}
	}
	for _, tc := range []struct{ field, marker, err string }{
		{"Tags", "set", ""},
		{"Upstreams", "map", ""},
		{"Hooks", "atomic", ""},
		{"Tags", "atomic", `field /tags: its doc says +listType=atomic, and strata merges it as set: give it no list tag`},
		{"Hooks", "set", `field /hooks: its doc says +listType=set, and strata merges it as append: give it strata:"list-type=set"`},
		{"Tags", "map", `field /tags: its doc says +listType=map, and strata merges it as set: give it strata:"list-map-key=KEY"`},
	} {
		_, err := For(kind, upstreams.GroupVersion, docs(tc.field, tc.marker))
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s +listType=%s: %v, want %q", tc.field, tc.marker, err, tc.err)
		}
	}
	if fd := parseDoc("Text.\n+listType=set\n"); fd.text != "Text." || fd.tags[listTypeMarker] != "set" {
		t.Errorf("parseDoc: %+v", fd)
	}
}
