package layers

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// decoder turns merged layers into a typed configuration: decode in
// version into, default, convert to the codec's hub, validate.
type decoder[T runtime.Object] struct {
	codec    *scheme.Codec
	into     schema.GroupVersion
	schema   *merge.Schema
	validate func(T) field.ErrorList
}

// stack is lower layers (the cluster ConfigMap) merged and decoded once, so
// that a change of the layers above them (a namespace's, the flags) costs a
// merge of those layers and a decode of the keys they set, not a decode of
// the whole configuration. It is immutable.
//
// The lower layers are decoded field by field (merge.Schema.Set) into a
// zero object that is not defaulted. A snapshot then:
//
//  1. merges the upper layers above the lower ones (merge.Result.Extend);
//  2. copies the decoded object and sets on the copy every key an upper
//     layer changed, a removed key zeroed;
//  3. defaults, converts to the hub and validates the copy;
//  4. defers the attribution of defaulted keys and the content hash until
//     they are asked for.
//
// That is exact when every key is flat and every value is a scalar
// (merge.Schema.Set says which); otherwise, and when the first snapshot
// built both ways differs (see newStack), the whole configuration is
// decoded as before.
type stack[T runtime.Object] struct {
	d       *decoder[T]
	res     *merge.Result  // the lower layers merged; never filled
	sources []merge.Source // of the lower layers
	typed   runtime.Object // res set field by field; nil: decode whole
}

// newStack merges lower and decodes it field by field, and returns the
// snapshot of lower with upper above it, built both ways: if the two
// differ, or the whole decode fails where the field-by-field one does not,
// the stack decodes whole from then on. The error is the whole decode's:
// the layers do not decode, default, convert or validate.
func newStack[T runtime.Object](d *decoder[T], upper []*merge.Layer, lower ...*merge.Layer) (*stack[T], *Snapshot[T], error) {
	st := &stack[T]{d: d, res: merge.Merge(lower...)}
	for _, l := range lower {
		st.sources = append(st.sources, l.Source)
	}
	whole, err := st.decodeWhole(st.res.Extend(upper...), upper)
	if err != nil {
		return nil, nil, err
	}
	typed, err := d.codec.New(d.into)
	if err != nil {
		return nil, nil, err
	}
	typed.GetObjectKind().SetGroupVersionKind(d.into.WithKind(d.codec.Kind()))
	if st.res.Flat() && setAll(d.schema, typed, st.res, 0) == nil {
		st.typed = typed
		if fast, err := st.snapshot(upper); err != nil || !reflect.DeepEqual(fast.Object, whole.Object) {
			st.typed = nil
		}
	}
	return st, whole, nil
}

// setAll sets on obj every key that layers from the n-th on set in res,
// skipping apiVersion and kind (the decoder sets them from the version).
func setAll(s *merge.Schema, obj runtime.Object, res *merge.Result, n int) error {
	var err error
	res.EachFrom(n, func(k, v string) bool {
		if k == "/apiVersion" || k == "/kind" {
			return true
		}
		err = s.Set(obj, k, v)
		return err == nil
	})
	return err
}

// snapshot merges upper above the stack's layers and returns the typed,
// validated snapshot of everything.
func (st *stack[T]) snapshot(upper []*merge.Layer) (*Snapshot[T], error) {
	res := st.res.Extend(upper...) // (1)
	if st.typed == nil || !res.Flat() {
		return st.decodeWhole(res, upper)
	}
	obj := st.typed.DeepCopyObject() // (2)
	if setAll(st.d.schema, obj, res, len(st.sources)) != nil {
		return st.decodeWhole(res, upper)
	}
	st.d.codec.Default(obj) // (3)
	hub := obj              // its type meta was set on st.typed
	if st.d.into != st.d.codec.Hub() {
		var err error
		if hub, err = st.d.codec.Scheme().UnsafeConvertToVersion(obj, st.d.codec.Hub()); err != nil {
			return nil, fmt.Errorf("converting the configuration to %s: %w", st.d.codec.Hub(), err)
		}
	}
	typed, ok := hub.(T)
	if !ok {
		return nil, fmt.Errorf("the hub type is %T, not %s", hub, reflect.TypeFor[T]())
	}
	versioned := obj
	res.FillFunc(merge.Source{Kind: KindDefault}, func(values map[string]string) map[string]string { // (4)
		effective, err := json.Marshal(versioned)
		if err != nil {
			return nil
		}
		flat, err := merge.Flatten(effective)
		if err != nil {
			return nil
		}
		return defaulted(values, flat, st.d.schema)
	})
	if st.d.validate != nil {
		if errs := validation.Attribute(st.d.validate(typed), res.SourceOf); len(errs) > 0 {
			return nil, fmt.Errorf("invalid configuration:\n%w", errs)
		}
	}
	return st.newSnapshot(typed, res, upper), nil
}

// decodeWhole decodes the effective values of res as one document.
func (st *stack[T]) decodeWhole(res *merge.Result, upper []*merge.Layer) (*Snapshot[T], error) {
	_, obj, err := decodeTyped(st.d.codec, st.d.into, st.d.schema, res.Values(), res, st.d.validate)
	if err != nil {
		return nil, err
	}
	return st.newSnapshot(obj, res, upper), nil
}

func (st *stack[T]) newSnapshot(obj T, res *merge.Result, upper []*merge.Layer) *Snapshot[T] {
	s := &Snapshot[T]{Object: obj, Result: res, Rejected: res.Dropped()}
	s.Sources = make([]merge.Source, 0, len(st.sources)+len(upper))
	s.Sources = append(s.Sources, st.sources...)
	for _, l := range upper {
		s.Sources = append(s.Sources, l.Source)
	}
	return s
}
