// Package secret hides the values of secret fields in a configuration
// shown to people: the z-pages' /configz and --explain.
package secret

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/stratacfg/strata/merge"
)

// Classified replaces a secret value.
const Classified = "CLASSIFIED"

// Classify returns doc, a JSON document, with the value at every key that
// secret reports replaced by Classified; its numbers are kept as written.
func Classify(doc []byte, secret func(key string) bool) ([]byte, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(classify(v, "", secret))
}

// classify replaces what secret reports under key in v.
func classify(v any, key string, secret func(string) bool) any {
	if key != "" && secret(key) {
		return Classified
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = classify(e, merge.Child(key, k), secret)
		}
	case []any:
		for i, e := range t {
			t[i] = classify(e, merge.Child(key, strconv.Itoa(i)), secret)
		}
	}
	return v
}
