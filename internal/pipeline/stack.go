package pipeline

import (
	"fmt"
	"hash/maphash"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

// Stack is lower layers (a cluster ConfigMap) merged and decoded once, so
// that a change of the layers above them (a namespace's, the flags) costs
// a merge of those layers and a decode of the keys they set, not a decode
// of the whole configuration. It is safe for concurrent use.
//
// The lower layers are decoded field by field (typed.Type.Set) into a zero
// object that is not defaulted. Build then:
//
//  1. merges the upper layers above the lower ones (Engine.Extend);
//  2. returns the object it built before from the same keys and values
//     set above the lower layers, if it kept one (see shared: one built
//     a second time is kept): the objects Build returns are shared,
//     never to be changed;
//  3. or copies the decoded object (typed.FlatCopy: two allocations when
//     its pointers point to scalars) and sets on the copy every key an
//     upper layer changed, a removed key zeroed, then defaults, converts
//     to the hub and validates the copy;
//  4. defers the attribution of defaulted keys until it is asked for.
//
// That is exact when every key is flat, a member of the document set
// whole (typed.Type.Set says which members it sets, maps and lists
// included); otherwise, and when the first result built both ways
// differs (see NewStack), the whole configuration is decoded.
type Stack[T runtime.Object] struct {
	kind    *scheme.Kind
	t       *typed.Type
	res     *merge.Result   // the lower layers merged; never filled
	sources []merge.Source  // of the lower layers
	typed   runtime.Object  // res set field by field; nil: decode whole
	flat    *typed.FlatCopy // copies typed in two allocations; nil: DeepCopyObject
	shared  *shared
}

// NewStack merges lower and decodes it field by field, and returns the
// configuration of lower with upper above it, built both ways: if the two
// differ, or the whole decode fails where the field-by-field one does not,
// the stack decodes whole from then on. The error is the whole decode's:
// the layers do not decode, default, convert or validate.
func NewStack[T runtime.Object](k *scheme.Kind, upper []*merge.Layer, lower ...*merge.Layer) (*Stack[T], T, *merge.Result, error) {
	var zero T
	st := &Stack[T]{kind: k, t: typeOf(k), res: merge.Merge(lower...), shared: &shared{seed: maphash.MakeSeed()}}
	for _, l := range lower {
		st.sources = append(st.sources, l.Source)
	}
	obj, res, _, err := st.decodeWhole(Engine.Extend(st.res, upper...))
	if err != nil {
		return nil, zero, nil, err
	}
	typedObj, err := k.New(k.MergeVersion())
	if err != nil {
		return nil, zero, nil, err
	}
	typedObj.GetObjectKind().SetGroupVersionKind(k.MergeVersion().WithKind(k.GroupKind().Kind))
	if Engine.Flat(st.res) && st.setAll(typedObj, st.res, 0) {
		st.typed = typedObj
		st.flat, _ = typed.NewFlatCopy(typedObj)
		if fast, _, _, err := st.Build(upper); err != nil || !reflect.DeepEqual(fast, obj) {
			st.typed = nil
		}
	}
	return st, obj, res, nil
}

// Whole returns a stack over the same layers that always decodes the whole
// configuration, to check the fast path against.
func (st *Stack[T]) Whole() *Stack[T] {
	out := *st
	out.typed = nil
	return &out
}

// Sources returns the sources of the lower layers.
func (st *Stack[T]) Sources() []merge.Source { return st.sources }

// setAll sets on obj every key that layers from the n-th on set in res,
// skipping apiVersion and kind (the decoder sets them from the version).
// It reports false when a key cannot be set field by field.
func (st *Stack[T]) setAll(obj runtime.Object, res *merge.Result, n int) bool {
	return !Engine.EachFrom(res, n, setKey, st.t, obj)
}

// setKey sets key on obj, a pointer to a value of t.
func setKey(t, obj any, key, value string) bool {
	if key == "/apiVersion" || key == "/kind" {
		return true
	}
	return t.(*typed.Type).Set(obj, key, value) == nil
}

// Build merges upper above the stack's layers and returns the typed,
// validated configuration of everything, its merge result, and what the
// builds that share the object share besides (nil when it is not kept).
func (st *Stack[T]) Build(upper []*merge.Layer) (T, *merge.Result, *Shared, error) {
	var zero T
	res := Engine.Extend(st.res, upper...) // (1)
	if st.typed == nil || !Engine.Flat(res) {
		return st.decodeWhole(res)
	}
	n := len(st.sources)
	sum := st.shared.sum(res, n)
	defer sums.Put(sum)
	if b := st.shared.get(res, n, sum); b != nil { // (2)
		st.attributeDefaults(res, b.versioned)
		return b.hub.(T), res, &b.Shared, nil
	}
	obj := st.copyTyped() // (3)
	if !st.setAll(obj, res, n) {
		return st.decodeWhole(res)
	}
	k := st.kind
	k.Scheme().Default(obj)
	hub := obj // its type meta was set on st.typed
	if k.MergeVersion() != k.Hub() {
		var err error
		if hub, err = k.Scheme().UnsafeConvertToVersion(obj, k.Hub()); err != nil {
			return zero, nil, nil, fmt.Errorf("converting the configuration to %s: %w", k.Hub(), err)
		}
	}
	var set map[string]string
	if st.shared.door.Again(sum.sum) {
		set = st.shared.set(res, n, sum) // before the fill: reading res applies it
	}
	st.attributeDefaults(res, obj)
	if _, err := validate[T](k, obj, hub, res, Hooks{}); err != nil {
		return zero, nil, nil, err
	}
	if set == nil {
		return hub.(T), res, nil, nil
	}
	b := st.shared.keep(sum, set, hub, obj)
	return b.hub.(T), res, &b.Shared, nil
}

// attributeDefaults credits to defaulting, when res is first read, the
// keys of versioned (the configuration in the merge version, defaulted)
// that no layer of res set or whose value defaulting changed (4).
func (st *Stack[T]) attributeDefaults(res *merge.Result, versioned runtime.Object) {
	Engine.FillFunc(res, merge.Source{Origin: OriginDefault}, defaultedKeys, st.t, versioned)
}

// defaultedKeys returns the keys of versioned, a runtime.Object of t, a
// *typed.Type, that values does not hold or holds otherwise.
func defaultedKeys(t, versioned any, values map[string]string) map[string]string {
	flat, err := flatten(versioned.(runtime.Object))
	if err != nil {
		return nil
	}
	return Defaulted(values, flat, t.(*typed.Type))
}

// copyTyped returns a copy of the lower layers' decoded object.
func (st *Stack[T]) copyTyped() runtime.Object {
	if st.flat != nil {
		return st.flat.Copy().(runtime.Object)
	}
	return st.typed.DeepCopyObject()
}

// decodeWhole decodes the effective values of res as one document.
func (st *Stack[T]) decodeWhole(res *merge.Result) (T, *merge.Result, *Shared, error) {
	_, obj, err := Decode[T](st.kind, res.Values(), res, Hooks{})
	if err != nil {
		var zero T
		return zero, nil, nil, err
	}
	return obj, res, nil, nil
}

// FieldByField reports whether the stack sets the keys of upper layers
// field by field, rather than decoding the whole configuration.
func (st *Stack[T]) FieldByField() bool { return st.typed != nil }
