package schemetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// CheckEmpty fails t for every map or slice field of every version of k
// that cannot tell "set to empty" from "unset" on its way through the
// layers. A layer that sets `allowedOrigins: []` means "no origins", above
// a lower layer that listed some; that meaning holds only when
//
//   - the empty value survives encoding (omitzero, not omitempty, which
//     drops it and turns it back into unset when a merged configuration
//     is written out and read again), and
//   - the version's defaulting leaves an empty value alone (it defaults
//     nil, not every value of length 0).
//
// Each field is decoded alone, set to empty, in its version, and encoded
// again. A field whose empty value means unset by design is declared
// validation.EmptyIsUnset (`strata:"empty-is-unset"`). Call it from a test
// of the kind, beside validation.CheckStrings.
func CheckEmpty(t TB, k *scheme.Kind) {
	t.Helper()
	for _, v := range k.Versions() {
		gv := k.Preferred()
		gv.Version = v.Version
		fields := k.Fields(gv)
		if fields == nil {
			continue
		}
		typed.For(fields.Type()).Walk(func(key string, sf reflect.StructField) bool {
			if strings.Contains(key, "/*") || fields.Has(key, validation.EmptyIsUnset) {
				return !strings.Contains(key, "/*")
			}
			empty := emptyOf(sf.Type)
			if empty == "" {
				return true
			}
			if msg := checkEmpty(k, gv.String(), key, empty); msg != "" {
				t.Errorf("field %s of %s cannot tell empty from unset: %s", key, gv, msg)
			}
			return true
		})
	}
}

// emptyOf returns the empty JSON value of a map or slice type, or "".
func emptyOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Map:
		return "{}"
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		return "[]"
	}
	return ""
}

// checkEmpty decodes a document of version gv that sets key to empty, and
// says what became of it, or "" when it stayed empty.
func checkEmpty(k *scheme.Kind, gv, key, empty string) string {
	segs, ok := merge.Segments(key)
	if !ok {
		return "its key is no JSON pointer"
	}
	var value any = json.RawMessage(empty)
	for i := len(segs) - 1; i >= 0; i-- {
		value = map[string]any{segs[i]: value}
	}
	doc := value.(map[string]any)
	doc["apiVersion"], doc["kind"] = gv, k.GroupKind().Kind
	data, err := json.Marshal(doc)
	if err != nil {
		return err.Error()
	}
	into := k.Preferred()
	into.Version = gv[strings.LastIndexByte(gv, '/')+1:]
	d, err := k.Decode(data, scheme.DecodeOptions{Source: "an empty " + key, Into: into, AllowExperimental: true})
	if err != nil {
		return fmt.Sprintf("a document that sets it to %s does not decode: %v", empty, err)
	}
	out, err := json.Marshal(d.Object)
	if err != nil {
		return err.Error()
	}
	got := json.RawMessage(out)
	for _, s := range segs {
		var m map[string]json.RawMessage
		if json.Unmarshal(got, &m) != nil {
			return "its parent does not encode as an object"
		}
		if got, ok = m[s]; !ok {
			return fmt.Sprintf("set to %s, it is gone once encoded (omitempty drops it: use omitzero, or mark it %s)", empty, validation.EmptyIsUnset)
		}
	}
	if string(got) != empty {
		return fmt.Sprintf("set to %s, defaulting makes it %s (default it only when nil, or mark it %s)", empty, got, validation.EmptyIsUnset)
	}
	return ""
}
