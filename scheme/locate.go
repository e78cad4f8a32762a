package scheme

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
)

// The decoders a document goes through name some bad values only by what
// was wrong with them ("time: unknown unit", "json: unsupported value:
// NaN"), not by where they were. The functions here find the field, on the
// error path only, so that the message names it.

// unmarshalerField finds the field of the gvk document j whose type
// decodes itself (a duration, a quantity) and refused its value. It
// returns "" when there is none: the error was something else.
func (k *Kind) unmarshalerField(j []byte, gvk schema.GroupVersionKind) string {
	obj, err := k.scheme.New(gvk)
	if err != nil {
		return ""
	}
	leaves, err := merge.Flatten(j)
	if err != nil {
		return ""
	}
	keys := make([]string, 0, len(leaves))
	for key := range leaves {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	t := typed.For(reflect.TypeOf(obj))
	for _, key := range keys {
		ft, ok := t.At(key)
		if !ok {
			continue
		}
		u, ok := reflect.New(ft).Interface().(json.Unmarshaler)
		if !ok {
			continue
		}
		if err := u.UnmarshalJSON([]byte(leaves[key])); err != nil {
			return fmt.Sprintf("field %s: %s: %v", dotted(key), text.Cut(leaves[key], text.MaxQuoted), err)
		}
	}
	return ""
}

// nonFiniteField finds the first NaN or infinite number of the YAML
// document raw, which JSON cannot hold, and names its field.
func nonFiniteField(raw []byte) string {
	var doc any
	if yaml.Unmarshal(raw, &doc) != nil {
		return ""
	}
	path, v, ok := findNonFinite(doc, "")
	if !ok {
		return ""
	}
	return fmt.Sprintf("field %s: %s is not a number JSON can hold: NaN and infinities are not allowed", path, v)
}

func findNonFinite(v any, path string) (string, string, bool) {
	join := func(seg string) string {
		if path == "" {
			return seg
		}
		return path + "." + seg
	}
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return path, strconv.FormatFloat(x, 'g', -1, 64), true
		}
	case map[any]any:
		keys := make([]string, 0, len(x))
		byName := make(map[string]any, len(x))
		for k, e := range x {
			name := fmt.Sprint(k)
			keys = append(keys, name)
			byName[name] = e
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, s, ok := findNonFinite(byName[k], join(k)); ok {
				return p, s, true
			}
		}
	case []any:
		for i, e := range x {
			if p, s, ok := findNonFinite(e, path+"["+strconv.Itoa(i)+"]"); ok {
				return p, s, true
			}
		}
	}
	return "", "", false
}

// invalidUTF8 describes where data first stops being UTF-8, or returns ""
// when it is valid throughout. YAML refuses such input and JSON would
// silently replace the bytes, so both are refused, alike.
func invalidUTF8(data []byte) string {
	if utf8.Valid(data) {
		return ""
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return fmt.Sprintf("the input is not valid UTF-8: byte 0x%02x at line %d, column %d", data[i], line, col)
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return ""
}

// dotted writes a JSON pointer as a field path: /a/b is a.b.
func dotted(key string) string {
	segs, ok := merge.Segments(key)
	if !ok {
		return key
	}
	return strings.Join(segs, ".")
}
