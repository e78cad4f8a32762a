package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/merge"
)

// Error is a field error with the layer that set the offending key.
type Error struct {
	// Err is the field error.
	Err *field.Error
	// Key is the JSON pointer of the offending field, when known.
	Key string
	// Source is the layer whose value is at fault; zero when the field
	// was not set by any layer or could not be traced.
	Source merge.Source
}

func (e *Error) Error() string {
	msg := e.Err.Error()
	if e.Err.Field == "" || e.Err.Field == "<nil>" {
		// An error of the whole configuration (a validator's plain error
		// that names no field): its message says it all.
		msg = e.Err.Detail
	}
	if e.Source.Origin == "" {
		return msg
	}
	return e.Source.String() + ": " + msg
}

// Unwrap returns the field error.
func (e *Error) Unwrap() error { return e.Err }

// ErrorList is every validation error at once, each with its layer.
type ErrorList []*Error

func (l ErrorList) Error() string {
	return text.List(len(l), func(i int) string { return l[i].Error() }, "\n")
}

// Attribute attaches to each error the layer that set its field, found in
// r (merge.Result.SourceOf). A field path such as "clientConnection.qps"
// or "featureGates[AlphaThing]" is read as the key "/clientConnection/qps"
// or "/featureGates/AlphaThing"; when no layer set that key, its nearest
// set ancestor is used ("allowedOrigins[1]" was set as the whole
// "/allowedOrigins"). An index into a keyed list names the element by its
// key instead, in the error as in the key ("targets[3].url" becomes
// "targets[name=zzz].url", credited to the layer that gave that element's
// url): the index counts the list of validated, the object the errors
// are about, which no file wrote. Errors keep their order; those of errs
// are not modified.
func Attribute(errs field.ErrorList, r *merge.Result, validated any) ErrorList {
	if len(errs) == 0 {
		return nil
	}
	elems := &elements{r: r, validated: validated}
	out := make(ErrorList, len(errs))
	for i, e := range errs {
		key := KeyOf(e.Field)
		if path, at, ok := elems.keyedPath(e.Field); ok {
			c := *e
			c.Field = path
			e, key = &c, at
		}
		out[i] = &Error{Err: e, Key: key}
		for k := key; k != ""; k = parent(k) {
			src, ok := r.SourceOf(k)
			if !ok {
				continue
			}
			if k != key { // a member of a value set whole: of a keyed list's element, of a map in one key
				src, _ = r.SourceOfMember(k, key[len(k):])
			}
			out[i].Key, out[i].Source = k, src
			break
		}
	}
	return out
}

// elements reads the keyed lists of the validated object, decoded once.
type elements struct {
	r         *merge.Result
	validated any
	doc       any
	decoded   bool
}

// keyOf returns the key of element i of the keyed list at key in the
// validated object, as the list's pointer segment.
func (x *elements) keyOf(key string, i int) (string, string, bool) {
	member, ok := x.r.ListMember(key)
	if !ok || x.validated == nil {
		return "", "", false
	}
	if !x.decoded {
		x.decoded = true
		if b, err := json.Marshal(x.validated); err == nil {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			_ = dec.Decode(&x.doc)
		}
	}
	segs, _ := merge.Segments(key)
	node := x.doc
	for _, s := range segs {
		m, ok := node.(map[string]any)
		if !ok {
			return "", "", false
		}
		node = m[s]
	}
	list, ok := node.([]any)
	if !ok || i < 0 || i >= len(list) {
		return "", "", false
	}
	switch member {
	case merge.ListSet: // an element is its own key
		b, err := json.Marshal(list[i])
		if err != nil {
			return "", "", false
		}
		if s, ok := list[i].(string); ok {
			return member, s, true
		}
		return member, string(b), true
	case merge.ListAppend: // the i-th of the layers' elements, in order
		children := x.r.Elements(key)
		if i >= len(children) {
			return "", "", false
		}
		return member, children[i], true
	}
	e, ok := list[i].(map[string]any)
	if !ok || e[member] == nil {
		return "", "", false
	}
	if s, ok := e[member].(string); ok {
		return member, s, true
	}
	b, err := json.Marshal(e[member])
	return member, string(b), err == nil
}

// keyedPath rewrites each index of path into a keyed list as the
// element's key, [member=key], and returns the field's JSON pointer;
// false when there is none.
func (x *elements) keyedPath(path string) (string, string, bool) {
	if !strings.Contains(path, "[") {
		return path, "", false
	}
	var b strings.Builder
	key, changed := "", false
	for rest := path; rest != ""; {
		switch rest[0] {
		case '.':
			b.WriteByte('.')
			rest = rest[1:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				b.WriteString(rest)
				rest = ""
				continue
			}
			seg := strings.Trim(rest[1:end], `"`)
			if n, err := strconv.Atoi(seg); err == nil {
				if member, name, ok := x.keyOf(key, n); ok {
					switch member {
					case merge.ListSet:
						fmt.Fprintf(&b, "[%s]", strconv.Quote(name))
					case merge.ListAppend:
						b.WriteString(rest[:end+1]) // its position, as the list holds it
					default:
						fmt.Fprintf(&b, "[%s=%s]", member, name)
					}
					key = merge.Child(key, name)
					changed = true
					rest = rest[end+1:]
					continue
				}
			}
			b.WriteString(rest[:end+1])
			key = merge.Child(key, seg)
			rest = rest[end+1:]
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			b.WriteString(rest[:end])
			key = merge.Child(key, rest[:end])
			rest = rest[end:]
		}
	}
	return b.String(), key, changed
}

func parent(key string) string {
	if i := strings.LastIndexByte(key, '/'); i > 0 {
		return key[:i]
	}
	return ""
}

// KeyOf turns a field.Path string ("a.b[c].d", "list[0]") into a JSON pointer
// ("/a/b/c/d", "/list/0").
func KeyOf(path string) string {
	var segs []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				segs = append(segs, path[1:])
				path = ""
				continue
			}
			segs = append(segs, strings.Trim(path[1:end], `"`))
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segs = append(segs, path[:end])
			path = path[end:]
		}
	}
	return merge.Pointer(segs...)
}

// Recognizes returns whether gate knows a feature of a name, one not yet
// introduced at its emulated version included (SetFromMap says why such a
// gate cannot be set).
func Recognizes(gate featuregate.MutableFeatureGate) func(name string) bool {
	known := map[featuregate.Feature]bool{}
	for f := range gate.GetAll() {
		known[f] = true
	}
	// GetAll leaves out gates not yet introduced at the emulated version.
	if vg, ok := gate.(interface {
		GetAllVersioned() map[featuregate.Feature]featuregate.VersionedSpecs
	}); ok {
		for f := range vg.GetAllVersioned() {
			known[f] = true
		}
	}
	return func(name string) bool { return known[featuregate.Feature(name)] }
}

// FeatureGates validates a map of feature gates against gate: an unknown
// gate, and a locked gate set away from its locked value, are errors, one per
// gate, at fldPath.Key(name), but for unknown gates past the first
// text.MaxListed-1, which are counted in one error at fldPath. gate is not
// modified.
func FeatureGates(gate featuregate.MutableFeatureGate, gates map[string]bool, fldPath *field.Path) field.ErrorList {
	names := make([]string, 0, len(gates))
	for n := range gates {
		names = append(names, n)
	}
	sort.Strings(names)
	known := Recognizes(gate)
	var errs field.ErrorList
	unknown := 0
	for _, n := range names {
		if !known(n) {
			// As SetFromMap says it, without a copy of the gate for each
			// of a hostile file's thousands of names, and named no more
			// often than a message lists problems.
			if unknown++; unknown < text.MaxListed {
				errs = append(errs, field.Invalid(fldPath.Key(n), gates[n], "unrecognized feature gate: "+n))
			}
			continue
		}
		if err := gate.DeepCopy().SetFromMap(map[string]bool{n: gates[n]}); err != nil {
			errs = append(errs, field.Invalid(fldPath.Key(n), gates[n], err.Error()))
		}
	}
	if more := unknown - (text.MaxListed - 1); more > 0 {
		errs = append(errs, field.Invalid(fldPath, fmt.Sprintf("%d more gates", more), fmt.Sprintf("%d more unrecognized feature gates", more)))
	}
	return errs
}
