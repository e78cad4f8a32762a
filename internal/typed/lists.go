package typed

import (
	"reflect"
	"strings"
	"sync"

	"github.com/stratacfg/strata/merge"
)

// ListKeyTag is the option of the strata struct tag that makes a slice of
// structs a keyed list, merged per element as server-side apply merges a
// +listType=map list: `strata:"list-map-key=name"`.
const ListKeyTag = "list-map-key="

// listKey returns the key member f's tag declares for its slice, if any.
func listKey(f reflect.StructField) (string, bool) {
	for _, opt := range strings.Split(f.Tag.Get("strata"), ",") {
		if k, ok := strings.CutPrefix(strings.TrimSpace(opt), ListKeyTag); ok && k != "" && deref(f.Type).Kind() == reflect.Slice {
			return k, true
		}
	}
	return "", false
}

var listsCache sync.Map // reflect.Type → merge.Lists

// Lists returns the keyed lists of the document, by key pattern: every
// slice field tagged list-map-key, a map's values as "*".
func (s *Type) Lists() merge.Lists {
	if v, ok := listsCache.Load(s.root); ok {
		return v.(merge.Lists)
	}
	lists := merge.Lists{}
	s.Walk(func(key string, f reflect.StructField) bool {
		if k, ok := listKey(f); ok && !strings.HasSuffix(key, "/*") {
			lists[key] = k
		}
		return true
	})
	if len(lists) == 0 {
		lists = nil
	}
	v, _ := listsCache.LoadOrStore(s.root, lists)
	return v.(merge.Lists)
}

// Flatten is merge.Flatten with the document's keyed lists.
func (s *Type) Flatten(doc []byte) (map[string]string, error) { return s.Lists().Flatten(doc) }

// Unflatten is merge.Unflatten with the document's keyed lists.
func (s *Type) Unflatten(values map[string]string) ([]byte, error) {
	return s.Lists().Unflatten(values)
}
