// Package pipeline turns merged raw keys into a typed configuration, the
// steps a component and a namespaced resolver share: decode in the merge
// version, which defaults; attribute what defaulting filled; convert to the
// hub; validate, naming the layer that set each offending key. A Stack
// does the same for layers above a base decoded once, setting only the
// keys they change.
package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/internal/mergeengine"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// OriginDefault is the origin of the values defaulting filled.
const OriginDefault = "default"

// Engine is the merge engine's hooks.
var Engine = mergeengine.Get[*merge.Result, *merge.Layer, merge.Source]()

// Hooks are a caller's own steps in Decode.
type Hooks struct {
	// Default defaults what the scheme's defaulting leaves to the caller,
	// on the defaulted object of the merge version; nil for nothing.
	Default func(versioned runtime.Object)
	// Skip reports the keys that do not apply here (the fields of
	// another operating system): whatever defaulting put there is taken
	// out before conversion, and their validation errors are dropped.
	// No layer may set them; the caller refuses that first.
	Skip func(key string) bool
	// Refused are errors the caller found in the layers themselves, each
	// credited to its layer already; they follow the validator's.
	Refused validation.ErrorList
}

// Decode turns the merged values of r (paths resolved, as values holds
// them) into the typed configuration: it decodes them as a document of the
// merge version, which defaults it; runs the caller's hooks on it; records
// in r the keys defaulting filled or changed, as OriginDefault; converts to
// the hub; and validates, naming the layer that set each offending key. It
// returns the defaulted versioned object and the hub object. r must not be
// shared yet.
func Decode[T runtime.Object](k *scheme.Kind, values map[string]string, r *merge.Result, h Hooks) (runtime.Object, T, error) {
	var zero T
	versioned, err := decodeMerged(k, values)
	if err != nil {
		return nil, zero, err
	}
	if h.Default != nil {
		if err := safely(func() { h.Default(versioned) }); err != nil {
			return nil, zero, fmt.Errorf("defaulting the merged configuration: %w", err)
		}
	}
	flat, err := flatten(versioned)
	if err != nil {
		return nil, zero, err
	}
	if h.Skip != nil {
		if err := drop(versioned, flat, h.Skip); err != nil {
			return nil, zero, err
		}
	}
	Engine.Fill(r, merge.Source{Origin: OriginDefault}, Defaulted(values, flat, typeOf(k)))
	hub, err := k.Scheme().ConvertToVersion(versioned.DeepCopyObject(), k.Hub())
	if err != nil {
		return nil, zero, fmt.Errorf("converting the configuration to %s: %w", k.Hub(), err)
	}
	obj, err := validate[T](k, versioned, hub, r, h)
	return versioned, obj, err
}

// drop takes the keys skip reports out of obj, whose flattened keys flat
// holds (and loses them too): field by field where it can, by decoding
// what is left otherwise.
func drop(obj runtime.Object, flat map[string]string, skip func(string) bool) error {
	var dropped []string
	for key := range flat {
		if skip(key) {
			delete(flat, key)
			dropped = append(dropped, key)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	t := typed.For(reflect.TypeOf(obj))
	if !slices.ContainsFunc(dropped, func(key string) bool { return t.Set(obj, key, merge.Tombstone) != nil }) {
		return nil
	}
	doc, err := t.Unflatten(flat)
	if err != nil {
		return err
	}
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	return json.Unmarshal(doc, obj)
}

// safely runs fn, turning a panic into an error.
func safely(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	fn()
	return nil
}

// validate checks that hub is a T and validates it with the kind's
// validator, and versioned, the same configuration in the merge version
// (nil when it is the hub), with the declarative validation of its type,
// attributing each error to the layer of r that set its field, dropping
// the errors of the keys h.Skip reports and adding h.Refused.
func validate[T runtime.Object](k *scheme.Kind, versioned, hub runtime.Object, r *merge.Result, h Hooks) (T, error) {
	var zero T
	obj, ok := hub.(T)
	if !ok {
		return zero, fmt.Errorf("the hub type is %T, not %s", hub, reflect.TypeFor[T]())
	}
	var errs field.ErrorList
	if versioned != nil && k.MergeVersion() != k.Hub() {
		errs = k.Declared(versioned)
	}
	errs = append(errs, k.Validate(hub)...)
	if h.Skip != nil {
		errs = slices.DeleteFunc(errs, func(e *field.Error) bool { return h.Skip(validation.KeyOf(e.Field)) })
	}
	validated := hub // the errors' field paths: keyed lists keep their order through conversion
	if versioned != nil {
		validated = versioned
	}
	if errs := append(validation.Attribute(errs, r, validated), h.Refused...); len(errs) > 0 {
		return zero, fmt.Errorf("invalid configuration:\n%w", errs)
	}
	return obj, nil
}

// typeOf returns the typed view of the kind's merge version.
func typeOf(k *scheme.Kind) *typed.Type { return typed.For(k.MergeFields().Type()) }

// decodeMerged decodes the merged values as a document of the merge
// version, defaulted. Every key was type-checked in its own layer, so an
// error here is a conflict between layers.
func decodeMerged(k *scheme.Kind, values map[string]string) (runtime.Object, error) {
	_, v := values["/apiVersion"]
	_, kd := values["/kind"]
	if v || kd {
		values = maps.Clone(values)
		delete(values, "/apiVersion")
		delete(values, "/kind")
	}
	doc, err := typeOf(k).Unflatten(values)
	if err != nil {
		return nil, fmt.Errorf("merging configuration: %w", err)
	}
	// The document's type, written first into the object Unflatten made.
	meta, _ := json.Marshal(metav1.TypeMeta{APIVersion: k.MergeVersion().String(), Kind: k.GroupKind().Kind})
	if rest := bytes.TrimPrefix(doc, []byte("{")); len(rest) > 1 {
		doc = slices.Concat(meta[:len(meta)-1], []byte(","), rest)
	} else {
		doc = meta
	}
	d, err := k.Decode(doc, scheme.DecodeOptions{Source: "merged configuration", Into: k.MergeVersion(), AllowExperimental: true})
	if err != nil {
		return nil, err
	}
	return d.Object, nil
}

// flatten flattens obj, its keyed lists per element.
func flatten(obj runtime.Object) (map[string]string, error) {
	return typed.For(reflect.TypeOf(obj)).FlattenObject(obj)
}

// Defaulted returns the keys of the effective document that no layer set
// (set holds the merged values, paths resolved), or whose value defaulting
// changed (a component-base struct defaults an explicit 0 burst to 100):
// provenance must name defaulting for those. Values are compared by their
// Go type, so "1m" and "1m0s" are the same. A value a layer set whole (an
// object in one ConfigMap key) whose members defaulting filled or changed
// is returned whole, as defaulted, as a keyed list's element is: the
// layer's members are found under it (merge.Result.SourceOfMember).
func Defaulted(set, effective map[string]string, t *typed.Type) map[string]string {
	out := map[string]string{}
	appended := appendedBy(set, t.Lists())
	var under map[string]map[string]string // set keys → the effective values under them
	for k, v := range effective {
		if k == "/apiVersion" || k == "/kind" {
			continue
		}
		if i := strings.LastIndexByte(k, '/'); i > 0 && appended[k[:i]] {
			continue // the layers' elements, which Merge keys by layer
		}
		if old, ok := set[k]; ok && SameValue(t, k, old, v) {
			continue
		}
		if above, ok := setAbove(set, k); ok {
			if under == nil {
				under = map[string]map[string]string{}
			}
			if under[above] == nil {
				under[above] = map[string]string{}
			}
			under[above][k[len(above):]] = v
			continue
		}
		out[k] = v
	}
	for above, values := range under {
		if layer, err := merge.Flatten([]byte(set[above])); err == nil {
			for k, v := range values {
				if lv, ok := layer[k]; ok && lv != v && SameValue(t, above+k, lv, v) {
					values[k] = lv // as the layer wrote it ("1m", not "1m0s"): its member is found in the refill
				}
			}
		}
		if whole, ok := wholeValue(t, above, values); ok && !SameValue(t, above, set[above], whole) {
			out[above] = whole
		}
	}
	return out
}

// wholeValue returns the JSON value at key whose leaves are values, keyed
// below key, unless a list merged per element is under key (its elements
// are keyed otherwise).
func wholeValue(t *typed.Type, key string, values map[string]string) (string, bool) {
	for p := range t.Lists() {
		if merge.Under(p, key) || merge.Covers(p, key) {
			return "", false
		}
	}
	doc, err := merge.Unflatten(values)
	return string(doc), err == nil
}

// appendedBy returns the appended lists (merge.ListAppend) of lists that
// set gives elements of.
func appendedBy(set map[string]string, lists merge.Lists) map[string]bool {
	if !slices.Contains(slices.Collect(maps.Values(lists)), merge.ListAppend) {
		return nil
	}
	out := map[string]bool{}
	for k := range set {
		if i := strings.LastIndexByte(k, '/'); i > 0 && !out[k[:i]] {
			if m, ok := lists.Member(k[:i]); ok && m == merge.ListAppend {
				out[k[:i]] = true
			}
		}
	}
	return out
}

// setAbove returns the ancestor of key that set holds, if any.
func setAbove(set map[string]string, key string) (string, bool) {
	for i := len(key) - 1; i > 0; i-- {
		if key[i] == '/' {
			if _, ok := set[key[:i]]; ok {
				return key[:i], true
			}
		}
	}
	return "", false
}

// SameValue reports whether the JSON values a and b of key decode to the
// same Go value of the type at key.
func SameValue(t *typed.Type, key, a, b string) bool {
	if a == b {
		return true
	}
	rt, ok := t.At(key)
	if !ok {
		return false
	}
	x, y := reflect.New(rt), reflect.New(rt)
	if json.Unmarshal([]byte(a), x.Interface()) != nil || json.Unmarshal([]byte(b), y.Interface()) != nil {
		return false
	}
	return reflect.DeepEqual(x.Interface(), y.Interface())
}
