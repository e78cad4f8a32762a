package jsonschema

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/stratacfg/strata/scheme"
)

// Docs holds what the sources of Go types say beyond the types: each
// field's doc comment and +k8s: tags, and the values of each enum type
// (a string type tagged +k8s:enum, its values the constants declared of
// it).
type Docs struct {
	fields map[string]fieldDoc // "pkg.Type.Field"
	enums  map[string][]any    // "pkg.Type"
}

type fieldDoc struct {
	text string
	tags map[string]string
}

// LoadDocs reads the doc comments of every package that declares a type
// the versions of k reach, from their sources, which `go list` finds in
// the current module's build list. It runs at generation time.
func LoadDocs(k *scheme.Kind) (*Docs, error) {
	pkgs := map[string]bool{}
	for _, v := range k.Versions() {
		if f := k.Fields(schema.GroupVersion{Group: k.GroupKind().Group, Version: v.Version}); f != nil {
			packagesOf(f.Type(), pkgs, map[reflect.Type]bool{})
		}
	}
	var paths []string
	for p := range pkgs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return loadPackages(paths...)
}

// loadPackages reads the doc comments of the Go packages paths.
func loadPackages(paths ...string) (*Docs, error) {
	d := &Docs{fields: map[string]fieldDoc{}, enums: map[string][]any{}}
	if len(paths) == 0 {
		return d, nil
	}
	var stderr bytes.Buffer
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{.Dir}} {{join .GoFiles \",\"}}"}, paths...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("jsonschema: go list: %v: %s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("jsonschema: go list found no source for %q", line)
		}
		var files []string
		for _, name := range strings.Split(f[2], ",") {
			files = append(files, filepath.Join(f[1], name))
		}
		if err := d.read(f[0], files); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// read reads the Go files of the package whose import path is path, those
// of the build (go list's GoFiles).
func (d *Docs) read(path string, names []string) error {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("jsonschema: reading %s: %w", path, err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, path, doc.PreserveAST)
	if err != nil {
		return err
	}
	for _, t := range p.Types {
		for _, spec := range t.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || ts.Name.Name != t.Name {
				continue
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, f := range st.Fields.List {
					fd := parseDoc(f.Doc.Text())
					for _, n := range f.Names {
						d.fields[path+"."+t.Name+"."+n.Name] = fd
					}
					if name := embeddedName(f.Type); len(f.Names) == 0 && name != "" {
						d.fields[path+"."+t.Name+"."+name] = fd
					}
				}
			}
		}
		if _, enum := parseDoc(t.Doc).tags["enum"]; !enum {
			continue
		}
		for _, c := range t.Consts {
			for _, spec := range c.Decl.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil {
							d.enums[path+"."+t.Name] = append(d.enums[path+"."+t.Name], s)
						}
					}
				}
			}
		}
	}
	return nil
}

// listTypeMarker is the tag parseDoc keeps a field's +listType= marker
// under.
const listTypeMarker = "+listType"

// parseDoc splits a doc comment into its text, its +k8s: tags and its
// +listType= marker.
func parseDoc(text string) fieldDoc {
	fd := fieldDoc{tags: map[string]string{}}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if tag, ok := strings.CutPrefix(t, "+k8s:"); ok {
			name, value, _ := strings.Cut(tag, "=")
			fd.tags[name] = value
			continue
		}
		if value, ok := strings.CutPrefix(t, "+listType="); ok {
			fd.tags[listTypeMarker] = strings.TrimSpace(value) // what the merge must agree with
			continue
		}
		if strings.HasPrefix(t, "+") {
			continue
		}
		lines = append(lines, l)
	}
	fd.text = strings.TrimSpace(strings.Join(lines, "\n"))
	return fd
}

// embeddedName is the field name Go gives an embedded field of type x:
// its type's name, without package, pointer or type arguments.
func embeddedName(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.SelectorExpr:
			return e.Sel.Name
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// declared names type t as its source declares it: its package path and
// its name without type arguments.
func declared(t reflect.Type) string {
	name, _, _ := strings.Cut(t.Name(), "[")
	return t.PkgPath() + "." + name
}

// field returns the doc of field name of struct type t.
func (d *Docs) field(t reflect.Type, name string) fieldDoc {
	if d == nil {
		return fieldDoc{}
	}
	return d.fields[declared(t)+"."+name]
}

// enum returns the values of the enum type t, or nil.
func (d *Docs) enum(t reflect.Type) []any {
	if d == nil || t.Name() == "" {
		return nil
	}
	return append([]any(nil), d.enums[declared(t)]...)
}

// apply sets what fd says on s: the description, and the bounds of the
// tags validation-gen also reads.
func (d *Docs) apply(s *spec.Schema, fd fieldDoc) {
	if fd.text != "" {
		s.Description = fd.text
	}
	num := func(name string) (*float64, bool) {
		v, ok := fd.tags[name]
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(v, 64)
		return &f, err == nil
	}
	count := func(name string) (*int64, bool) {
		v, ok := fd.tags[name]
		if !ok {
			return nil, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		return &n, err == nil
	}
	// A tag bounds the field within what its type holds.
	if v, ok := num("minimum"); ok && (s.Minimum == nil || *v > *s.Minimum) {
		s.Minimum = v
	}
	if v, ok := num("maximum"); ok && (s.Maximum == nil || *v < *s.Maximum) {
		s.Maximum = v
	}
	if v, ok := count("maxItems"); ok {
		s.MaxItems = v
	}
	if v, ok := count("minItems"); ok {
		s.MinItems = v
	}
	if v, ok := count("maxLength"); ok {
		s.MaxLength = v
	}
	if v, ok := count("minLength"); ok {
		s.MinLength = v
	}
	if f, ok := fd.tags["format"]; ok {
		s.AddExtension("x-kubernetes-format", f)
	}
	// +k8s:subfield(NAME)=+k8s:TAG=VALUE bounds a member of a struct the
	// field's type declares elsewhere.
	for name, inner := range fd.tags {
		sub, ok := strings.CutPrefix(name, "subfield(")
		if !ok || !strings.HasSuffix(sub, ")") {
			continue
		}
		sub = strings.TrimSuffix(sub, ")")
		if p, ok := s.Properties[sub]; ok {
			d.apply(&p, parseDoc(inner))
			s.Properties[sub] = p
		}
	}
}

// packagesOf adds the packages that declare the named struct types t
// reaches, and their enums.
func packagesOf(t reflect.Type, pkgs map[string]bool, seen map[reflect.Type]bool) {
	t = deref(t)
	if seen[t] {
		return
	}
	seen[t] = true
	if t.PkgPath() != "" && (t.Kind() == reflect.Struct || t.Kind() == reflect.String) {
		pkgs[t.PkgPath()] = true
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				packagesOf(t.Field(i).Type, pkgs, seen)
			}
		}
	case reflect.Map, reflect.Slice, reflect.Array:
		packagesOf(t.Elem(), pkgs, seen)
	}
}
