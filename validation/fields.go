// Package validation holds what strata knows about configuration fields
// beyond their types: which are paths, which take effect only at a restart,
// which only the cluster may set. It also has helpers over
// k8s.io/apimachinery's field.ErrorList that name the layer that set each
// offending key.
//
// Markers are read from the struct tag strata, each Marker by the name its
// String gives: `strata:"path"`, `strata:"restart-only,cluster-only"`,
// `strata:"not-path"`, `strata:"secret"`; on a slice of
// structs, the member that keys a list merged per element:
// `strata:"list-map-key=name"`; on a slice whose elements have no key, a
// strategy other than replace: `strata:"list-type=set"` (scalars, merged
// as a set) or `strata:"list-type=append"`; the operating system a field
// belongs to: `strata:"os=linux"` (see Fields.OS); and the feature gate a
// field needs: `strata:"feature-gate=NAME"` (see Fields.Gates). FieldsFor
// also takes markers declared by key, for types whose tags the program
// cannot change.
package validation

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
)

// Marker is a property of a configuration field. Markers combine as bits.
type Marker uint16

const (
	// Path marks a string field that holds a filesystem path: a relative
	// value resolves against the directory of the file that set it, and a
	// namespace layer may not set it.
	Path Marker = 1 << iota
	// NotPath declares a string field not to be a path, so that
	// CheckStrings knows it was considered.
	NotPath
	// RestartOnly marks a field whose change takes effect only when the
	// process restarts; a live reload that changes it reports that.
	RestartOnly
	// ClusterOnly marks a field that only cluster-level layers may set.
	ClusterOnly
	// Overridable marks a field that a tenant (namespace) layer may set
	// when the operator allows namespace overrides.
	Overridable
	// Alpha marks a field of alpha stability: a namespace layer may set
	// it only when the cluster layer allows alpha fields, or to false.
	Alpha
	// Beta marks a field of beta stability: a namespace layer may set it
	// only when the cluster layer allows beta (or alpha) fields, or to
	// false.
	Beta
	// InstanceOnly marks a field that belongs to one instance (its host
	// name, its node's address): a component refuses it in the shared
	// --config file and its drop-ins, which every instance reads, and
	// takes it from --instance-config and flags.
	InstanceOnly
	// EmptyIsUnset declares a map or slice field whose empty value means
	// the same as leaving it unset, so that CheckEmpty does not ask it to
	// tell them apart.
	EmptyIsUnset
	// Secret marks a field whose value is a credential: z-pages and
	// --explain show it CLASSIFIED, and a flag bound to it too. A list
	// merged as a set or by a key cannot be one: its elements, or their
	// keys, are keys.
	Secret
)

var markerNames = []struct {
	m    Marker
	name string
}{{Path, "path"}, {NotPath, "not-path"}, {RestartOnly, "restart-only"}, {ClusterOnly, "cluster-only"}, {Overridable, "overridable"}, {Alpha, "alpha"}, {Beta, "beta"}, {InstanceOnly, "instance-only"}, {EmptyIsUnset, "empty-is-unset"}, {Secret, "secret"}}

func (m Marker) String() string {
	var out []string
	for _, n := range markerNames {
		if m&n.m != 0 {
			out = append(out, n.name)
		}
	}
	return strings.Join(out, ",")
}

// tagName is the struct tag strata reads markers from (the package doc
// gives its forms).
const tagName = "strata"

// osTag is the option of the strata tag that names a field's operating
// system.
const osTag = "os="

// gateTag is the option of the strata tag that names the feature gate a
// field needs.
const gateTag = "feature-gate="

// Fields holds the markers of a versioned configuration type: those written
// as struct tags and those declared for keys of types the author does not
// own (a component-base struct's kubeconfig). It is read-only after
// construction and safe for concurrent use.
type Fields struct {
	t       *typed.Type
	markers map[string]Marker // key pattern → markers
	wild    []patternMarker   // the patterns with a "*" segment
	sorted  []patternMarker   // every pattern, sorted
	oses    map[string]string // key → the operating system it belongs to
	osWild  []string          // the keys of oses with a "*" segment, sorted
	gates   map[string]string // key → the feature gate it needs
	// inList are the fields inside list elements, which typed.Type does
	// not reach, by key ("*" for the element), with their types.
	inList map[string]reflect.Type
	// recurs maps each key where a struct type is met inside itself to
	// the key of the type's first place: what is under it is what is
	// under that place.
	recurs map[string]string
}

type patternMarker struct {
	pattern string
	m       Marker
}

// FieldsFor reads the markers of the versioned type t from its struct tags
// and adds declared, keyed by JSON pointer patterns ("*" matches one
// segment), and oses, the operating system of fields whose type has no
// such tag (key → GOOS, as `strata:"os=GOOS"` says it). Some come
// ready-made: apiVersion and kind are not paths, and the structs of
// k8s.io/component-base a configuration embeds
// (ClientConnectionConfiguration, LeaderElectionConfiguration,
// LoggingConfiguration) carry their markers wherever they are, embedded
// inline included. The fields inside list elements carry theirs under
// the list's key and "*"; a struct type met inside itself carries its
// markers at every depth. It fails on an unknown tag value, wherever it
// is; on a strata tag on an embedded struct, which names no key; on
// secret, os= or feature-gate= inside a list element, which would not
// apply; on a declared key that is no field of t; and on a field marked
// both path and not-path.
func FieldsFor(t reflect.Type, declared map[string]Marker, oses map[string]string) (*Fields, error) {
	f := &Fields{t: typed.For(t), markers: map[string]Marker{}, oses: map[string]string{}}
	var errs []string
	for _, k := range []string{"/apiVersion", "/kind"} {
		if ft, ok := f.t.At(k); ok && ft.Kind() == reflect.String {
			f.markers[k] = NotPath
		}
	}
	errs = append(errs, f.inLists(f.t.Root(), "", map[reflect.Type]string{}, false)...)
	f.t.Walk(func(key string, sf reflect.StructField) bool {
		errs = append(errs, f.readTag(key, sf, false)...)
		return true
	})
	for key, m := range declared {
		if _, ok := f.at(key); !ok {
			errs = append(errs, fmt.Sprintf("declared key %s is no field of %s", key, t))
			continue
		}
		f.markers[key] |= m
	}
	for key, goos := range oses {
		switch _, ok := f.t.At(strings.ReplaceAll(key, "*", "x")); { // not in a list element: it would not apply
		case !ok:
			errs = append(errs, fmt.Sprintf("declared key %s is no field of %s", key, t))
		case goos == "" || strings.ToLower(goos) != goos:
			errs = append(errs, fmt.Sprintf("field %s: %q is no operating system as GOOS names them", key, goos))
		case f.oses[key] != "" && f.oses[key] != goos:
			errs = append(errs, fmt.Sprintf("field %s is tagged for %s and declared for %s", key, f.oses[key], goos))
		default:
			f.oses[key] = goos
		}
	}
	for list, member := range f.t.Lists() {
		for key, m := range f.markers {
			if member != merge.ListAppend && m&Secret != 0 && (merge.Covers(key, list) || merge.Under(list, key)) {
				errs = append(errs, fmt.Sprintf("field %s is a list merged as a set or by a key, and secret: its elements or their keys would be keys, which provenance and z-pages show", list))
			}
		}
	}
	for key, m := range f.markers {
		if m&Path != 0 && m&NotPath != 0 {
			errs = append(errs, fmt.Sprintf("field %s is marked both path and not-path", key))
		}
		if m&Alpha != 0 && m&Beta != 0 {
			errs = append(errs, fmt.Sprintf("field %s is marked both alpha and beta", key))
		}
		if m&EmptyIsUnset != 0 {
			if ft, ok := f.at(key); !ok || !isMapOrSlice(ft) {
				errs = append(errs, fmt.Sprintf("field %s is marked empty-is-unset but is no map or slice", key))
			}
		}
	}
	for key := range f.oses {
		for p := parent(key); p != ""; p = parent(p) {
			if goos := f.oses[p]; goos != "" && goos != f.oses[key] {
				errs = append(errs, fmt.Sprintf("field %s is for %s, inside %s, which is for %s", key, f.oses[key], p, goos))
			}
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("validation: %s", strings.Join(errs, "; "))
	}
	for _, p := range sortedPatterns(f.markers) {
		pm := patternMarker{p, f.markers[p]}
		f.sorted = append(f.sorted, pm)
		if strings.Contains(p, "*") {
			f.wild = append(f.wild, pm)
		}
	}
	for key := range f.oses {
		if strings.Contains(key, "*") {
			f.osWild = append(f.osWild, key)
		}
	}
	sort.Strings(f.osWild)
	return f, nil
}

// inLists reads the types under t, at key, for what the walk of
// typed.Type does not reach: the fields inside list elements, whose tags
// it reads (their markers under the list's key and "*" for the element,
// so that a key that holds them, a tenant setting the list whole, is
// refused for what is inside, and a keyed list's element field marked
// path is resolved); the structs embedded inline (embedded); and the
// places where a struct type is met inside itself (recurs). open holds
// the struct types being read, each with its key.
func (f *Fields) inLists(t reflect.Type, key string, open map[reflect.Type]string, inList bool) []string {
	t = deref(t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return f.inLists(t.Elem(), key+"/*", open, true)
	case reflect.Map:
		return f.inLists(t.Elem(), key+"/*", open, inList)
	case reflect.Struct:
	default:
		return nil
	}
	if first, ok := open[t]; ok {
		if f.recurs == nil {
			f.recurs = map[string]string{}
		}
		f.recurs[key] = first
		return nil
	}
	open[t] = key
	defer delete(open, t)
	errs := f.embedded(t, key)
	typed.Members(t, func(name string, _ reflect.Type, sf reflect.StructField) {
		fk := key + "/" + name
		if inList {
			if f.inList == nil {
				f.inList = map[string]reflect.Type{}
			}
			f.inList[fk] = sf.Type
			errs = append(errs, f.readTag(fk, sf, true)...)
		}
		errs = append(errs, f.inLists(sf.Type, fk, open, inList)...)
	})
	return errs
}

// embedded gives the members of struct type t at key the markers of the
// component-base structs t embeds inline (readyMade), and returns an
// error for a strata tag on an embedded struct, which names no key.
func (f *Fields) embedded(t reflect.Type, key string) []string {
	var errs []string
	for i := range t.NumField() {
		sf := t.Field(i)
		et := deref(sf.Type)
		if name, _, _ := strings.Cut(sf.Tag.Get("json"), ","); !sf.Anonymous || name != "" || et.Kind() != reflect.Struct {
			continue
		}
		for sub, m := range readyMade[et] {
			f.markers[key+sub] |= m
		}
		if tag, ok := sf.Tag.Lookup(tagName); ok {
			errs = append(errs, fmt.Sprintf("field %s: %s:%q on the embedded %s names no key: tag its fields", cmp.Or(key, "/"), tagName, tag, sf.Name))
		}
		errs = append(errs, f.embedded(et, key)...)
	}
	return errs
}

// readTag records what the strata tag of the field sf at key says, and
// returns its problems. In a list element (inList), secret, os= and
// feature-gate= are refused: a key holds the whole list, so they would
// not apply.
func (f *Fields) readTag(key string, sf reflect.StructField, inList bool) []string {
	for sub, m := range readyMade[deref(sf.Type)] {
		f.markers[key+sub] |= m
	}
	tag, ok := sf.Tag.Lookup(tagName)
	if !ok || strings.HasSuffix(key, "/*") { // a map's values: the map's tag
		return nil
	}
	var errs []string
	for _, name := range strings.Split(tag, ",") {
		name = strings.TrimSpace(name)
		lt, isListType := strings.CutPrefix(name, typed.ListTypeTag)
		gate, isGate := strings.CutPrefix(name, gateTag)
		goos, isOS := strings.CutPrefix(name, osTag)
		switch st := deref(sf.Type); {
		case strings.HasPrefix(name, typed.ListKeyTag): // a keyed list: typed.Type.Lists
		case isListType && lt != "set" && lt != "append":
			errs = append(errs, fmt.Sprintf("field %s: %s%q is neither set nor append", key, typed.ListTypeTag, lt))
		case isListType && st.Kind() != reflect.Slice:
			errs = append(errs, fmt.Sprintf("field %s: %s%s is for a slice, and it is a %s", key, typed.ListTypeTag, lt, st.Kind()))
		case isListType && lt == "set" && (!typed.Scalar(deref(st.Elem())) || st.Elem().Kind() == reflect.Uint8):
			errs = append(errs, fmt.Sprintf("field %s: %sset is for a slice of strings, numbers or booleans, and its elements are %s", key, typed.ListTypeTag, st.Elem()))
		case isListType: // a list strategy: typed.Type.Lists
		case inList && (name == "secret" || isOS || isGate):
			errs = append(errs, fmt.Sprintf("field %s: %s applies to no field inside a list element", key, name))
		case isGate && gate == "":
			errs = append(errs, fmt.Sprintf("field %s: %s names no feature gate", key, gateTag))
		case isGate:
			if f.gates == nil {
				f.gates = map[string]string{}
			}
			f.gates[key] = gate
		case isOS && (goos == "" || strings.ToLower(goos) != goos):
			errs = append(errs, fmt.Sprintf("field %s: %s%q is no operating system as GOOS names them", key, osTag, goos))
		case isOS:
			f.oses[key] = goos
		default:
			m, ok := parseMarker(name)
			if !ok {
				errs = append(errs, fmt.Sprintf("field %s: unknown %s tag %q", key, tagName, name))
			}
			f.markers[key] |= m
		}
	}
	return errs
}

// at returns the Go type of the field at key, "*" for any map member or
// list element, those inside list elements included.
func (f *Fields) at(key string) (reflect.Type, bool) {
	if t, ok := f.inList[key]; ok {
		return deref(t), true
	}
	return f.t.At(strings.ReplaceAll(key, "*", "x"))
}

func parseMarker(s string) (Marker, bool) {
	for _, n := range markerNames {
		if n.name == s {
			return n.m, true
		}
	}
	return 0, false
}

// OS returns the operating system (as runtime.GOOS names it) that key
// belongs to, and the field that says so: key's own or an ancestor's
// `strata:"os=..."`. A field of an OS is defaulted and validated only on
// that OS, and setting it on another is an error.
func (f *Fields) OS(key string) (goos, field string, ok bool) {
	if len(f.oses) == 0 {
		return "", "", false
	}
	for p := key; p != ""; p = parent(p) {
		if goos, ok := f.oses[p]; ok {
			return goos, p, true
		}
	}
	for _, p := range f.osWild { // a field of a map's values
		if merge.Covers(p, key) {
			return f.oses[p], p, true
		}
	}
	return "", "", false
}

// Gates returns the fields that need a feature gate
// (`strata:"feature-gate=NAME"`), each with its gate: a layer that sets
// one, or anything under it, while the gate is off is refused
// (layers.Component checks it against the component's feature gates, a
// featureGates map the layers set included).
func (f *Fields) Gates() map[string]string { return maps.Clone(f.gates) }

// OSFields returns the fields that belong to an operating system, each
// with its OS.
func (f *Fields) OSFields() map[string]string {
	out := make(map[string]string, len(f.oses))
	for k, v := range f.oses {
		out[k] = v
	}
	return out
}

func isMapOrSlice(t reflect.Type) bool {
	t = deref(t)
	return t.Kind() == reflect.Map || t.Kind() == reflect.Slice
}

// Has reports whether key carries marker m: a pattern with m names key or
// an ancestor of it.
func (f *Fields) Has(key string, m Marker) bool { return f.Markers(key)&m != 0 }

// Markers returns every marker key carries: those of the patterns that name
// key or an ancestor of it, and in a struct type met inside itself, those
// of the same field at the type's first place. It allocates nothing but
// for such a key.
func (f *Fields) Markers(key string) Marker {
	var out Marker
	if len(f.recurs) > 0 {
		if first := f.firstPlace(key); first != key {
			out = f.Markers(first)
		}
	}
	for p := key; p != ""; {
		out |= f.markers[p]
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	for _, w := range f.wild {
		if merge.Covers(w.pattern, key) {
			out |= w.m
		}
	}
	return out
}

// Under returns the first pattern, in sorted order, that names a field
// strictly under key and carries one of the markers m. Setting key as a
// whole (an object or a map in one ConfigMap key) sets or replaces that
// field too, so a policy that protects the field must refuse the key.
func (f *Fields) Under(key string, m Marker) (pattern string, ok bool) {
	if len(f.recurs) > 0 {
		if first := f.firstPlace(key); first != key {
			return f.Under(first, m)
		}
	}
	for _, pm := range f.sorted {
		if pm.m&m != 0 && merge.Under(pm.pattern, key) {
			return pm.pattern, true
		}
	}
	return "", false
}

// firstPlace returns key with the part of it under a place where a struct
// type is met inside itself (recurs) put under the type's first place,
// as often as it goes through one. The first place is an ancestor of the
// other: its key is as many segments of key.
func (f *Fields) firstPlace(key string) string {
	for again := true; again; {
		again = false
		for at, first := range f.recurs {
			if merge.Covers(at, key) {
				rest := key[segmentsEnd(key, strings.Count(at, "/")):]
				key, again = key[:segmentsEnd(key, strings.Count(first, "/"))]+rest, true
			}
		}
	}
	return key
}

// segmentsEnd returns where the first n segments of key end.
func segmentsEnd(key string, n int) int {
	for i := range len(key) {
		if key[i] == '/' {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return len(key)
}

// Holds reports whether key carries marker m or holds a field that does:
// setting key as a whole (a flag bound to an object) sets that field too.
func (f *Fields) Holds(key string, m Marker) bool {
	if f.Has(key, m) {
		return true
	}
	_, under := f.Under(key, m)
	return under
}

// Keys returns the patterns that carry marker m, sorted.
func (f *Fields) Keys(m Marker) []string {
	var out []string
	for _, pm := range f.sorted {
		if pm.m&m != 0 {
			out = append(out, pm.pattern)
		}
	}
	return out
}

func sortedPatterns(m map[string]Marker) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Type returns the versioned Go type the markers are of.
func (f *Fields) Type() reflect.Type { return f.t.Root() }

// undeclaredStrings returns the keys of string fields (string, *string,
// []string, and string map values) that are declared neither Path nor
// NotPath. kubelet keeps a hand-written list of path fields guarded by a
// reflection test; this is that test for any type.
func (f *Fields) undeclaredStrings() []string {
	var out []string
	undeclared := func(key string, t reflect.Type) {
		if t = deref(t); t.Kind() == reflect.Slice {
			t = deref(t.Elem())
		}
		if t.Kind() == reflect.String && !f.Has(key, Path|NotPath) {
			out = append(out, key)
		}
	}
	f.t.Walk(func(key string, sf reflect.StructField) bool {
		undeclared(key, sf.Type)
		return true
	})
	for key, t := range f.inList { // a keyed list's element field marked path is resolved
		undeclared(key, t)
	}
	sort.Strings(out)
	return out
}

// TB is the part of testing.TB that CheckStrings uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// CheckStrings fails t for every string field that is declared neither a
// path nor not a path. Call it from a test of the configuration types, so
// that adding a path field without declaring it fails the build.
func CheckStrings(t TB, f *Fields) {
	t.Helper()
	for _, key := range f.undeclaredStrings() {
		t.Errorf("string field %s is declared neither a path nor not a path: tag it `%s:\"path\"` or `%s:\"not-path\"`, or declare it in FieldsFor", key, tagName, tagName)
	}
}
