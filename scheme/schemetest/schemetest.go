// Package schemetest has test helpers for configuration kinds built with
// strata's scheme package.
package schemetest

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// iterations is how many random objects RoundTrip tries per kind.
const iterations = 40

// TB is the part of testing.TB that RoundTrip uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

var _ TB = (*testing.T)(nil)

// RoundTrip fills every kind the internal version of install's group
// registers with random values, and checks that encoding it in each
// external version, as JSON and as YAML, and decoding it back gives the
// same object, as Kubernetes checks its own API groups.
//
// What decoding defaults, the object is given first: each random object
// is converted to the group's preferred external version, defaulted there
// and converted back, so that a defaulted field (an empty string that
// defaulting fills) needs no fuzzer function. A field whose random value
// its type cannot hold (an enum, a quantity) still changes; the failure
// names each field that changed, with a short diff, so that a fuzzer
// function can be written for it (fuzzers).
func RoundTrip(t TB, install func(*runtime.Scheme), fuzzers ...fuzzer.FuzzerFuncs) {
	t.Helper()
	s := runtime.NewScheme()
	install(s)
	codecs := serializer.NewCodecFactory(s)
	funcs := fuzzer.MergeFuzzerFuncs(append([]fuzzer.FuzzerFuncs{metafuzzer.Funcs}, fuzzers...)...)
	kinds := internalKinds(s)
	if len(kinds) == 0 {
		t.Fatal("schemetest: install registers no internal kind")
	}
	for _, gvk := range kinds {
		versions := externalVersions(s, gvk)
		if len(versions) == 0 {
			t.Errorf("schemetest: %s has no external version", gvk.Kind)
			continue
		}
		f := fuzzer.FuzzerFor(funcs, rand.NewSource(int64(len(gvk.Kind))), codecs)
		for i := range iterations {
			obj, err := s.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			f.Fill(obj)
			if err := defaultIn(s, obj, versions[0]); err != nil {
				t.Fatalf("%s: defaulting a random object in %s: %v", gvk.Kind, versions[0], err)
			}
			for _, gv := range versions {
				for _, media := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML} {
					if msg := roundTrip(s, codecs, obj, gvk, gv, media); msg != "" {
						t.Errorf("%s through %s as %s (object %d):\n%s", gvk.Kind, gv, media, i, msg)
						return
					}
				}
			}
		}
	}
}

// internalKinds lists the kinds of the internal version, but the List,
// Options and event kinds every group version carries.
func internalKinds(s *runtime.Scheme) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk := range s.AllKnownTypes() {
		k := gvk.Kind
		if gvk.Version != runtime.APIVersionInternal || strings.HasSuffix(k, "List") || strings.HasSuffix(k, "Options") || k == "WatchEvent" || k == "Status" {
			continue
		}
		out = append(out, gvk)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// externalVersions lists the versions of gvk's group that register its
// kind, preferred first.
func externalVersions(s *runtime.Scheme, gvk schema.GroupVersionKind) []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, gv := range s.PrioritizedVersionsForGroup(gvk.Group) {
		if s.Recognizes(gv.WithKind(gvk.Kind)) {
			out = append(out, gv)
		}
	}
	return out
}

// defaultIn gives the internal object obj what decoding in version gv
// defaults: obj is converted to gv twice, one copy defaulted, both
// converted back, and the fields in which the two differ are set on obj.
// Only defaulting's changes reach obj, so that a conversion that loses a
// field is still caught by the round trip.
func defaultIn(s *runtime.Scheme, obj runtime.Object, gv schema.GroupVersion) error {
	kinds, _, err := s.ObjectKinds(obj)
	if err != nil {
		return err
	}
	back := func(def bool) (runtime.Object, error) {
		ext, err := s.New(gv.WithKind(kinds[0].Kind))
		if err != nil {
			return nil, err
		}
		if err := s.Convert(obj.DeepCopyObject(), ext, nil); err != nil {
			return nil, err
		}
		if def {
			s.Default(ext)
		}
		out, err := s.New(kinds[0])
		if err != nil {
			return nil, err
		}
		return out, s.Convert(ext, out, nil)
	}
	before, err := back(false)
	if err != nil {
		return err
	}
	after, err := back(true)
	if err != nil {
		return err
	}
	applyChanged(reflect.ValueOf(obj).Elem(), reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem())
	return nil
}

// applyChanged sets in dst what differs between before and after, values
// of one type: the fields of a struct one by one, the entries of a map
// one by one, anything else whole.
func applyChanged(dst, before, after reflect.Value) {
	if reflect.DeepEqual(before.Interface(), after.Interface()) || !dst.CanSet() {
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		for i := range dst.NumField() {
			if dst.Type().Field(i).IsExported() {
				applyChanged(dst.Field(i), before.Field(i), after.Field(i))
			}
		}
		return
	case reflect.Pointer:
		if !dst.IsNil() && !before.IsNil() && !after.IsNil() {
			applyChanged(dst.Elem(), before.Elem(), after.Elem())
			return
		}
	case reflect.Map:
		if !dst.IsNil() && !after.IsNil() {
			for _, k := range after.MapKeys() {
				if b := before.MapIndex(k); !b.IsValid() || !reflect.DeepEqual(b.Interface(), after.MapIndex(k).Interface()) {
					dst.SetMapIndex(k, after.MapIndex(k))
				}
			}
			return
		}
	}
	dst.Set(after)
}

// roundTrip encodes obj in version gv as media and decodes it back to the
// internal version, and returns how it changed, or "".
func roundTrip(s *runtime.Scheme, codecs serializer.CodecFactory, obj runtime.Object, gvk schema.GroupVersionKind, gv schema.GroupVersion, media string) string {
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), media)
	if !ok {
		return "no serializer for " + media
	}
	in := obj.DeepCopyObject()
	data, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, gv), in)
	if err != nil {
		return fmt.Sprintf("encoding: %v", err)
	}
	out, err := runtime.Decode(codecs.DecoderToVersion(info.Serializer, gvk.GroupVersion()), data)
	if err != nil {
		return fmt.Sprintf("decoding: %v\n%s", err, data)
	}
	if !apiequality.Semantic.DeepEqual(obj, out) {
		return shortDiff(obj, out)
	}
	return ""
}

// shortDiff names the fields that differ between want and got, with their
// two values, in at most 20 lines.
func shortDiff(want, got runtime.Object) string {
	d := cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.EquateEmpty())
	var lines []string
	for _, l := range strings.Split(d, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+") {
			lines = append(lines, "  "+t)
		}
	}
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("  … %d more lines", len(lines)-20))
	}
	return "these fields changed (- before the round trip, + after); give each a fuzzer function if its random value is not one its type holds, or fix the conversion:\n" + strings.Join(lines, "\n")
}
