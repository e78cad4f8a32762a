// Package jsonschema writes a JSON Schema for every version of a
// configuration kind, for editors (yaml-language-server) and for checks in
// CI (kubeconform), and validates documents against them. A schema is
// built from the version's Go type, through kube-openapi's schema types:
// the JSON names of its fields, their doc comments, the enums and the
// +k8s: validation tags validation-gen reads (minimum, maximum, maxItems,
// maxLength), and strata's markers, as x-strata-markers.
//
// A schema is as strict as a Strict decode: a field the version does not
// have is refused, so a misspelt field fails in the editor and in CI as it
// fails the component. Every field may be null, which in a strata file
// removes what a lower layer set. apiVersion and kind are not required,
// since a drop-in may leave them out; the component requires them of
// --config.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// Draft is the JSON Schema draft the schemas are written in: draft 4,
// which kube-openapi, yaml-language-server and kubeconform all read.
const Draft = "http://json-schema.org/draft-04/schema#"

// For returns the JSON Schema of kind k in version gv. docs gives the
// descriptions, enums and tags of the Go types (LoadDocs); nil leaves them
// out.
func For(k *scheme.Kind, gv schema.GroupVersion, docs *Docs) (*spec.Schema, error) {
	fields := k.Fields(gv)
	if fields == nil {
		return nil, fmt.Errorf("jsonschema: %s is not registered in %s", k.GroupKind().Kind, gv)
	}
	b := builder{docs: docs, fields: fields, lists: typed.For(fields.Type()).Lists(), gates: fields.Gates()}
	root := b.object(fields.Type(), "")
	if len(b.errs) > 0 {
		slices.Sort(b.errs)
		return nil, fmt.Errorf("jsonschema: %s %s: %s", k.GroupKind().Kind, gv, strings.Join(b.errs, "; "))
	}
	root.Schema = Draft
	root.Title = fmt.Sprintf("%s %s", k.GroupKind().Kind, gv)
	if root.Description == "" {
		root.Description = fmt.Sprintf("%s, version %s.", k.GroupKind().Kind, gv)
	}
	root.Type = spec.StringOrArray{"object"}
	if p, ok := root.Properties["apiVersion"]; ok {
		p.Enum, p.Type = []any{gv.String()}, spec.StringOrArray{"string"}
		root.Properties["apiVersion"] = p
	}
	if p, ok := root.Properties["kind"]; ok {
		p.Enum, p.Type = []any{k.GroupKind().Kind}, spec.StringOrArray{"string"}
		root.Properties["kind"] = p
	}
	return root, nil
}

// FileName is the name of the schema of k in version gv, below a
// directory: GROUP/KIND_VERSION.json with KIND in lower case, the layout
// kubeconform finds with -schema-location
// 'DIR/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json'.
func FileName(k *scheme.Kind, gv schema.GroupVersion) string {
	return filepath.Join(gv.Group, strings.ToLower(k.GroupKind().Kind)+"_"+gv.Version+".json")
}

// Write writes the schema of every version of k that is not removed into
// dir (FileName), indented, and returns the paths it wrote. Docs are read
// from the sources of the packages that declare the versions' types.
func Write(k *scheme.Kind, dir string) ([]string, error) {
	docs, err := LoadDocs(k)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range k.Versions() {
		gv := schema.GroupVersion{Group: k.Group(), Version: v.Version}
		if v.Lifecycle == scheme.Removed || k.Fields(gv) == nil {
			continue
		}
		s, err := For(k, gv, docs)
		if err != nil {
			return nil, err
		}
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, FileName(k, gv))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Validate validates data, one YAML or JSON document, against s, and
// returns every problem, each naming its field; nil when it is valid. A
// field set twice is a problem, as strict decoding has it.
func Validate(s *spec.Schema, data []byte) []string {
	j, err := yamljson.ToJSONStrict(data, yamljson.Limit(len(data)))
	if err != nil {
		return []string{"not YAML with each field once: " + err.Error()}
	}
	var doc any
	if err := json.Unmarshal(j, &doc); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	res := validate.NewSchemaValidator(s, nil, "", strfmt.Default).Validate(doc)
	var out []string
	for _, e := range res.Errors {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

// builder builds the schema of one version.
type builder struct {
	docs   *Docs
	fields *validation.Fields
	lists  merge.Lists
	gates  map[string]string // the fields that need a feature gate
	// errs are the fields whose +listType marker the merge disagrees
	// with.
	errs []string
}

// listKey returns the member that keys the list at key, when it is a
// keyed list.
func (b *builder) listKey(key string) (string, bool) { return b.lists.Member(key) }

// checkListType records an error when the list at key does not merge
// as its +listType marker, want, says: a set as a set, a map by a key
// member, atomic as a whole (replace, the default).
func (b *builder) checkListType(key, want string) {
	member, ok := b.listKey(key)
	got := "atomic"
	if ok {
		got = merge.ListStrategy(member)
	}
	if got == want || want == "atomic" && got == "append" {
		return
	}
	tag := map[string]string{"set": `strata:"list-type=set"`, "map": `strata:"list-map-key=KEY"`, "atomic": "no list tag"}[want]
	if tag == "" {
		tag = "a +listType strata knows (atomic, set, map)"
	}
	b.errs = append(b.errs, fmt.Sprintf("field %s: its doc says +listType=%s, and strata merges it as %s: give it %s", key, want, got, tag))
}

// object is the schema of struct type t at key.
func (b *builder) object(t reflect.Type, key string) *spec.Schema {
	s := &spec.Schema{}
	s.Type = spec.StringOrArray{"object", "null"}
	s.Properties = map[string]spec.Schema{}
	s.AdditionalProperties = &spec.SchemaOrBool{Allows: false}
	b.members(t, key, s)
	return s
}

// members adds the JSON members of struct type t, those of the structs it
// embeds or inlines included, to s.
func (b *builder) members(t reflect.Type, key string, s *spec.Schema) {
	typed.Members(t, func(name string, owner reflect.Type, f reflect.StructField) {
		fk := key + "/" + name
		fs := b.value(f.Type, fk)
		fd := b.docs.field(owner, f.Name)
		b.docs.apply(fs, fd)
		if want, ok := fd.tags[listTypeMarker]; ok {
			b.checkListType(fk, want)
		}
		if m := b.fields.Markers(fk) &^ validation.NotPath; m != 0 {
			fs.AddExtension("x-strata-markers", strings.Split(m.String(), ","))
		}
		if goos, at, ok := b.fields.OS(fk); ok && at == fk {
			fs.AddExtension("x-strata-os", goos)
		}
		if gate, ok := b.gates[fk]; ok {
			fs.AddExtension("x-strata-feature-gate", gate)
		}
		s.Properties[name] = *fs
		if k, ok := b.listKey(fk); ok && k == merge.ListSet && fs.Items != nil {
			// Removals from the set, as a strategic merge patch writes
			// them (merge.Lists).
			del := spec.Schema{}
			del.Type = spec.StringOrArray{"array"}
			del.Items = &spec.SchemaOrArray{Schema: fs.Items.Schema}
			s.Properties["$deleteFromPrimitiveList/"+name] = del
		}
	})
}

// value is the schema of a value of type t at key.
func (b *builder) value(t reflect.Type, key string) *spec.Schema {
	t = deref(t)
	if s, ok := b.special(t); ok {
		return s
	}
	s := &spec.Schema{}
	switch t.Kind() {
	case reflect.Struct:
		return b.object(t, key)
	case reflect.Map:
		s.Type = spec.StringOrArray{"object", "null"}
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: b.value(t.Elem(), key+"/*")}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			s.Type = spec.StringOrArray{"string", "null"}
			s.Format = "byte"
			break
		}
		s.Type = spec.StringOrArray{"array", "null"}
		s.Items = &spec.SchemaOrArray{Schema: b.value(t.Elem(), key+"/*")}
		switch k, ok := b.listKey(key); {
		case !ok:
		case k == merge.ListSet:
			s.AddExtension("x-kubernetes-list-type", "set")
			s.UniqueItems = true
			elem := *s.Items.Schema
			elem.Type = slices.DeleteFunc(slices.Clone(elem.Type), func(t string) bool { return t == "null" }) // the loader refuses a null element
			s.Items.Schema = &elem
		case k == merge.ListAppend:
			s.AddExtension("x-strata-list-type", "append")
		default:
			s.AddExtension("x-kubernetes-list-type", "map")
			s.AddExtension("x-kubernetes-list-map-keys", []string{k})
			s.Items.Schema = keyedElement(s.Items.Schema, k)
		}
	case reflect.String:
		s.Type = spec.StringOrArray{"string", "null"}
		if values := b.docs.enum(t); len(values) > 0 {
			s.Enum = append(values, nil)
		}
	case reflect.Bool:
		s.Type = spec.StringOrArray{"boolean", "null"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		s.Type = spec.StringOrArray{"integer", "null"}
		if t.Kind() == reflect.Int32 || t.Kind() == reflect.Int64 {
			s.Format = t.Kind().String()
		}
		// The decoder refuses what the Go type cannot hold: so does the
		// schema, whatever an editor or a validator makes of the format.
		lo, hi := intBounds(t)
		s.Minimum, s.Maximum = &lo, &hi
	case reflect.Float32, reflect.Float64:
		s.Type = spec.StringOrArray{"number", "null"}
	default:
		// An interface holds anything.
	}
	return s
}

// keyedElement is the schema of an element of a list keyed by member,
// as the loader reads one: an object that has its key, or one that asks
// for the removal of the element of that key ({member: k, $patch:
// delete}, as a strategic merge patch writes it). That two elements share a key, which the loader
// refuses, is beyond what a JSON Schema can say.
func keyedElement(elem *spec.Schema, member string) *spec.Schema {
	whole := *elem
	whole.Type = spec.StringOrArray{"object"} // not null: the loader refuses an element that is not an object
	whole.Required = append(slices.Clone(whole.Required), member)
	whole.Properties = maps.Clone(whole.Properties)
	key := whole.Properties[member]
	key.Type = slices.DeleteFunc(slices.Clone(key.Type), func(t string) bool { return t == "null" }) // a null key is none
	whole.Properties[member] = key
	// A removal is read for its key and nothing else (Lists.Removals):
	// its other members are not decoded, and a key of any type names the
	// element whose key reads the same.
	remove := spec.Schema{}
	remove.Type = spec.StringOrArray{"object"}
	remove.Properties = map[string]spec.Schema{
		member:   {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string", "number", "integer", "boolean", "object", "array"}}},
		"$patch": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Enum: []any{"delete"}}},
	}
	remove.Required = []string{member, "$patch"}
	out := &spec.Schema{}
	out.Type = spec.StringOrArray{"object"}
	out.AnyOf = []spec.Schema{whole, remove}
	return out
}

// special is the schema of a type that encodes itself: the type and
// format it declares to OpenAPI (metav1.Duration is a string, a quantity a
// string or a number), or anything.
func (b *builder) special(t reflect.Type) (*spec.Schema, bool) {
	p := reflect.New(t).Interface()
	_, custom := p.(json.Unmarshaler)
	typer, typed := p.(interface{ OpenAPISchemaType() []string })
	if !custom && !typed {
		return nil, false
	}
	s := &spec.Schema{}
	if typed {
		s.Type = append(spec.StringOrArray{}, typer.OpenAPISchemaType()...)
		if f, ok := p.(interface{ OpenAPISchemaFormat() string }); ok {
			s.Format = f.OpenAPISchemaFormat()
		}
		if s.Format == "quantity" {
			s.Type = append(s.Type, "number")
		}
		if len(s.Type) > 0 {
			s.Type = append(s.Type, "null")
		}
	}
	return s, true
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// ValidateConfigMap validates data, the data of a ConfigMap whose keys are
// the members of kind k (a cluster ConfigMap or a tenant's overrides, as a
// namespaced resolver reads them), against s, k's schema in its merge
// version: each value is read as its member's type reads it (a string as
// it is, anything else as YAML), and keys that begin with "_" are
// documentation. It returns every problem; nil when data is valid.
func ValidateConfigMap(s *spec.Schema, k *scheme.Kind, data map[string]string) []string {
	t := typed.For(k.MergeFields().Type())
	doc := map[string]json.RawMessage{}
	var out []string
	for key, value := range data {
		if strings.HasPrefix(key, "_") {
			continue
		}
		ptr, j, err := t.ConvertMember(key, value)
		if err != nil {
			if _, known := t.At(ptr); known {
				out = append(out, err.Error())
				continue
			}
			j = strconv.Quote(value) // no such member: the schema says so
		}
		doc[key] = json.RawMessage(j)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return append(out, err.Error())
	}
	out = append(out, Validate(s, raw)...)
	slices.Sort(out)
	return out
}

// intBounds are the least and the greatest value of t, an integer type.
func intBounds(t reflect.Type) (float64, float64) {
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return 0, math.Ldexp(1, bits) - 1
	}
	return -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1) - 1
}
