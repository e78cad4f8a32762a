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
// fails the component; a value takes the JSON types its Go type decodes
// from (an IntOrString an integer or a string, a type that reads itself
// from text a string), and a struct type inside itself is a reference to
// its definition. Every field may be null, which in a strata file
// removes what a lower layer set. apiVersion and kind are not required,
// since a drop-in may leave them out; the component requires them of
// --config.
package jsonschema

import (
	"encoding"
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
	kjson "sigs.k8s.io/json"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/internal/yamljson"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// draft is the JSON Schema draft the schemas are written in: draft 4,
// which kube-openapi, yaml-language-server and kubeconform all read.
const draft = "http://json-schema.org/draft-04/schema#"

// For returns the JSON Schema of kind k in version gv. docs gives the
// descriptions, enums and tags of the Go types (LoadDocs); nil leaves them
// out.
func For(k *scheme.Kind, gv schema.GroupVersion, docs *Docs) (*spec.Schema, error) {
	fields := k.Fields(gv)
	if fields == nil {
		return nil, fmt.Errorf("jsonschema: %s is not registered in %s", k.GroupKind().Kind, gv)
	}
	b := builder{docs: docs, fields: fields, lists: typed.For(fields.Type()).Lists(), gates: fields.Gates(),
		open: map[reflect.Type]bool{}, recursive: map[reflect.Type]bool{}}
	root := b.object(fields.Type(), "")
	root.Definitions = b.definitions
	if len(b.errs) > 0 {
		slices.Sort(b.errs)
		return nil, fmt.Errorf("jsonschema: %s %s: %s", k.GroupKind().Kind, gv, strings.Join(b.errs, "; "))
	}
	root.Schema = draft
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

// fileName is the name of the schema of k in version gv, below a
// directory: GROUP/KIND_VERSION.json with KIND in lower case, the layout
// kubeconform finds with -schema-location
// 'DIR/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json'.
func fileName(k *scheme.Kind, gv schema.GroupVersion) string {
	return filepath.Join(gv.Group, strings.ToLower(k.GroupKind().Kind)+"_"+gv.Version+".json")
}

// Write writes the schema of every version of k that is not removed into
// dir (fileName), indented, and returns the paths it wrote. Docs are read
// from the sources of the packages that declare the versions' types.
func Write(k *scheme.Kind, dir string) ([]string, error) {
	docs, err := LoadDocs(k)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range k.Versions() {
		gv := schema.GroupVersion{Group: k.GroupKind().Group, Version: v.Version}
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
		p := filepath.Join(dir, fileName(k, gv))
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
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &doc); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	doc = bigIntsOnly(doc)
	if len(s.Definitions) > 0 { // the validator follows no reference
		expanded := expand(*s, s.Definitions, shapeOf(doc))
		s = &expanded
	}
	res := validate.NewSchemaValidator(s, nil, "", strfmt.Default).Validate(doc)
	var out []string
	for _, e := range res.Errors {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

// bigIntsOnly keeps as int64 only the integers of a decoded document past
// 2^53, and makes the others float64: as float64, one past 2^53 is no
// integer to the validator, and as int64, a small one is compared with a
// bound converted to int64, which overflows past 2^63 (a float32's).
func bigIntsOnly(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = bigIntsOnly(e)
		}
	case []any:
		for i, e := range v {
			v[i] = bigIntsOnly(e)
		}
	case int64:
		if v >= -1<<53 && v <= 1<<53 {
			return float64(v)
		}
	}
	return v
}

// expand returns s with each reference to a definition in defs replaced
// by the definition, where shape (the shape of the document, as shapeOf
// makes it) has a value for it to check; elsewhere a schema is empty, as
// nothing is there. The schema grows with the document, not with how
// often its types refer to themselves.
func expand(s spec.Schema, defs spec.Definitions, shape any) spec.Schema {
	if ref := s.Ref.String(); ref != "" {
		if shape == nil {
			return spec.Schema{}
		}
		s = defs[strings.TrimPrefix(ref, "#/definitions/")]
	}
	s.Definitions = nil
	obj, _ := shape.(map[string]any)
	var members any // every member of obj as one shape, for a map's values
	if s.PatternProperties != nil || s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		for _, v := range obj {
			members = mergeShapes(members, v)
		}
	}
	if s.Properties != nil {
		props := make(map[string]spec.Schema, len(s.Properties))
		for k, v := range s.Properties {
			props[k] = expand(v, defs, obj[k])
		}
		s.Properties = props
	}
	if s.PatternProperties != nil {
		pp := make(map[string]spec.Schema, len(s.PatternProperties))
		for k, v := range s.PatternProperties {
			pp[k] = expand(v, defs, members)
		}
		s.PatternProperties = pp
	}
	if a := s.AdditionalProperties; a != nil && a.Schema != nil {
		e := expand(*a.Schema, defs, members)
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: a.Allows, Schema: &e}
	}
	if s.Items != nil && s.Items.Schema != nil {
		var elem any
		if arr, ok := shape.([]any); ok && len(arr) > 0 {
			elem = arr[0]
		}
		e := expand(*s.Items.Schema, defs, elem)
		s.Items = &spec.SchemaOrArray{Schema: &e}
	}
	s.AnyOf, s.AllOf = expandEach(s.AnyOf, defs, shape), expandEach(s.AllOf, defs, shape)
	return s
}

// expandEach is expand of each of schemas, which check the same value.
func expandEach(schemas []spec.Schema, defs spec.Definitions, shape any) []spec.Schema {
	if schemas == nil {
		return nil
	}
	out := make([]spec.Schema, len(schemas))
	for i, s := range schemas {
		out[i] = expand(s, defs, shape)
	}
	return out
}

// shapeOf returns the objects and arrays of a decoded document, their
// scalars left out (true in their place), each array's elements merged
// into one: what expand follows.
func shapeOf(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = shapeOf(e)
		}
		return out
	case []any:
		var elem any
		for _, e := range v {
			elem = mergeShapes(elem, shapeOf(e))
		}
		return []any{elem}
	}
	return true
}

// mergeShapes returns a shape that holds what acc and b hold. acc is
// nil or a shape mergeShapes returned, which it changes and returns: b is
// copied into it, never shared, so that merging n shapes costs their
// size, not n times the merge's.
func mergeShapes(acc, b any) any {
	am, aObj := acc.(map[string]any)
	bm, bObj := b.(map[string]any)
	aa, aArr := acc.([]any)
	ba, bArr := b.([]any)
	switch {
	case acc == nil && bObj:
		out := make(map[string]any, len(bm))
		for k, v := range bm {
			out[k] = mergeShapes(nil, v)
		}
		return out
	case acc == nil && bArr:
		return []any{mergeShapes(nil, ba[0])}
	case acc == nil:
		return b
	case b == nil:
		return acc
	case aObj && bObj:
		for k, v := range bm {
			am[k] = mergeShapes(am[k], v)
		}
		return am
	case aArr && bArr:
		aa[0] = mergeShapes(aa[0], ba[0])
		return aa
	case aObj || aArr:
		return acc
	}
	return mergeShapes(nil, b)
}

// builder builds the schema of one version.
type builder struct {
	docs   *Docs
	fields *validation.Fields
	lists  merge.Lists
	gates  map[string]string // the fields that need a feature gate
	// open are the struct types being built, recursive those met again
	// inside themselves, whose schemas definitions holds.
	open, recursive map[reflect.Type]bool
	definitions     spec.Definitions
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
// A struct type met again inside itself is a reference to its schema
// among the root's definitions.
func (b *builder) object(t reflect.Type, key string) *spec.Schema {
	name := definitionName(t)
	if b.open[t] {
		b.recursive[t] = true
		return spec.RefSchema("#/definitions/" + name)
	}
	b.open[t] = true
	defer delete(b.open, t)
	s := &spec.Schema{}
	s.Type = spec.StringOrArray{"object", "null"}
	s.Properties = map[string]spec.Schema{}
	s.AdditionalProperties = &spec.SchemaOrBool{Allows: false}
	b.members(t, key, s)
	if b.recursive[t] {
		if b.definitions == nil {
			b.definitions = spec.Definitions{}
		}
		b.definitions[name] = *s
	}
	return s
}

// definitionName names struct type t among the definitions: its package
// path and name, with what a JSON pointer or a reader would trip on
// replaced.
func definitionName(t reflect.Type) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, t.PkgPath()+"."+t.Name())
}

// members adds the JSON members of struct type t, those of the structs it
// embeds or inlines included, to s.
func (b *builder) members(t reflect.Type, key string, s *spec.Schema) {
	typed.Members(t, func(name string, owner reflect.Type, f reflect.StructField) {
		fk := key + "/" + name
		fs := quoted(f)
		if fs == nil {
			fs = b.value(f.Type, fk)
		}
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
		elem := b.value(t.Elem(), key+"/*")
		switch t.Key().Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			s.PatternProperties = map[string]spec.Schema{"^-?[0-9]+$": *elem} // a member's name is its key's decimal
			s.AdditionalProperties = &spec.SchemaOrBool{Allows: false}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			s.PatternProperties = map[string]spec.Schema{"^[0-9]+$": *elem}
			s.AdditionalProperties = &spec.SchemaOrBool{Allows: false}
		default:
			s.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: elem}
		}
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 { // base64; a byte array is an array of numbers
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
		if t.Bits() == 64 {
			// The bound past 2^63, which a validator comparing int64s
			// (Validate's past 2^53) turns into -2^63: what is past it
			// is past int64's range, which bounds it instead.
			s.Maximum = nil
		}
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
	if elem.Ref.String() != "" {
		// The element's type holds the list (a tree): its schema is a
		// reference, which the element's must hold to as well.
		whole = spec.Schema{}
		whole.AllOf = []spec.Schema{*elem}
		whole.Properties = map[string]spec.Schema{member: {}}
	}
	whole.Type = spec.StringOrArray{"object"} // not null: the loader refuses an element that is not an object
	whole.Required = append(slices.Clone(whole.Required), member)
	whole.Properties = maps.Clone(whole.Properties)
	key := whole.Properties[member]
	key.Type = slices.DeleteFunc(slices.Clone(key.Type), func(t string) bool { return t == "null" }) // a null key is none
	if len(key.Type) == 0 && elem.Ref.String() != "" {
		key.Type = spec.StringOrArray{"string", "number", "integer", "boolean"}
	}
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

// special is the schema of a type that decodes itself: the types it
// declares to OpenAPI, all of those it takes where it names several (a
// quantity a string or a number, an IntOrString an integer or a string),
// and its format (metav1.Duration is a string); a string for a type that
// reads itself from text (netip.Addr); or anything.
func (b *builder) special(t reflect.Type) (*spec.Schema, bool) {
	p := reflect.New(t).Interface()
	_, custom := p.(json.Unmarshaler)
	_, text := p.(encoding.TextUnmarshaler)
	typer, typed := p.(interface{ OpenAPISchemaType() []string })
	oneOf, several := p.(interface{ OpenAPIV3OneOfTypes() []string })
	if !custom && !typed && !text {
		return nil, false
	}
	s := &spec.Schema{}
	switch {
	case several && len(oneOf.OpenAPIV3OneOfTypes()) > 0:
		s.Type = append(spec.StringOrArray{}, oneOf.OpenAPIV3OneOfTypes()...)
	case typed:
		s.Type = append(spec.StringOrArray{}, typer.OpenAPISchemaType()...)
	case !custom: // encoding/json reads it from a JSON string
		s.Type = spec.StringOrArray{"string"}
	}
	if f, ok := p.(interface{ OpenAPISchemaFormat() string }); ok && typed {
		s.Format = f.OpenAPISchemaFormat()
	}
	if len(s.Type) > 0 {
		s.Type = append(s.Type, "null")
	}
	return s, true
}

// quoted is the schema of a field tagged `json:",string"`, which holds
// its number or boolean as JSON inside a JSON string, as encoding/json
// reads one; nil for another field.
func quoted(f reflect.StructField) *spec.Schema {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !slices.Contains(strings.Split(opts, ","), "string") {
		return nil
	}
	t := f.Type
	if t.Name() == "" && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Float32, reflect.Float64:
		s := &spec.Schema{}
		s.Type = spec.StringOrArray{"string", "null"}
		return s
	}
	return nil
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
