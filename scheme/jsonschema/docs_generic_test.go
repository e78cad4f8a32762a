package jsonschema

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Generic and Named are declared, with their doc comments, in
// docsSource too, as the package's own source declares its types.
type Generic[T any] struct{ Value T }

type Inner struct{ N int }

type Named struct {
	Inner `json:"inner"`
}

const docsSource = `package jsonschema

type Generic[T any] struct {
	// Value is the value.
	Value T
}

type Named struct {
	// Inner is the inner part.
	Inner ` + "`json:\"inner\"`" + `
}
`

// TestDocsOfGenericAndEmbeddedFields: the doc comment of a field of a
// generic struct, and of an embedded field the JSON names, reach the
// schema as they do for any other field.
func TestDocsOfGenericAndEmbeddedFields(t *testing.T) {
	p := filepath.Join(t.TempDir(), "types.go")
	if err := os.WriteFile(p, []byte(docsSource), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &Docs{fields: map[string]fieldDoc{}, enums: map[string][]any{}}
	pkg := reflect.TypeFor[Named]().PkgPath()
	if err := d.read(pkg, []string{p}); err != nil {
		t.Fatal(err)
	}
	if got := d.field(reflect.TypeFor[Generic[int]](), "Value").text; got != "Value is the value." {
		t.Errorf("doc of Generic[int].Value = %q", got)
	}
	if got := d.field(reflect.TypeFor[Named](), "Inner").text; got != "Inner is the inner part." {
		t.Errorf("doc of Named.Inner = %q", got)
	}
}
