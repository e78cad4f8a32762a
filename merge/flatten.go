package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Tombstone is the JSON value that removes a key: the key goes back to what
// lower layers and defaulting give it (RFC 7386).
const Tombstone = "null"

// Flatten turns a JSON object into leaves: every member whose value is an
// object is descended into, every other value (string, number, bool, array,
// null, a reference) is a leaf keyed by its JSON pointer and kept as
// compact JSON text. Numbers keep their exact text. An empty object
// contributes no leaves, as in a JSON merge patch. The document must be a
// JSON object, and no object in it may give a member twice. Lists.Flatten
// also merges declared lists per element.
func Flatten(doc []byte) (map[string]string, error) { return Lists(nil).Flatten(doc) }

// FlattenValue flattens the JSON value v found at key into out: an object is
// descended into, anything else is one leaf. It is how a string value that
// parses to an object (a flag such as --feature-gates) merges per key.
func FlattenValue(out map[string]string, key string, v []byte) error {
	return Lists(nil).FlattenValue(out, key, v)
}

// Unflatten builds the JSON object whose leaves are values. Tombstones are
// left out. A key that is both a leaf and the ancestor of another key is an
// error; Merge never produces one. Member order is sorted, so the output is
// deterministic.
func Unflatten(values map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(values))
	for k, v := range values {
		if v != Tombstone {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	root := map[string]any{}
	for i, k := range keys {
		if i+1 < len(keys) && IsAncestor(k, keys[i+1]) {
			return nil, fmt.Errorf("%s is set as a value and also has member %s", k, keys[i+1])
		}
		segs, ok := Segments(k)
		if !ok || len(segs) == 0 {
			return nil, fmt.Errorf("%q is not a JSON pointer to a member", k)
		}
		node := root
		for _, s := range segs[:len(segs)-1] {
			child, ok := node[s].(map[string]any)
			if !ok {
				child = map[string]any{}
				node[s] = child
			}
			node = child
		}
		node[segs[len(segs)-1]] = json.RawMessage(values[k])
	}
	out, err := marshal(root)
	return []byte(out), err
}

func marshal(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

func displayKey(key string) string {
	if key == "" {
		return "document"
	}
	return key
}
