package merge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Ref is a value named instead of given: the key of a Secret, whose
// content strata never reads unless asked. A layer holds it as the leaf
// {"$ref":"secret NAMESPACE/NAME#KEY"} (RefOf), which merges like any
// other leaf: a reference in a higher layer beats a literal below, a
// literal beats a reference below, and the result keeps exactly one of
// the two. Wherever strata shows it (provenance, --explain, an error) it
// is that text, never the content.
type Ref struct {
	// Kind is what holds the value: "secret".
	Kind      string
	Namespace string
	Name      string
	Key       string
}

// String is "secret NAMESPACE/NAME#KEY".
func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name + "#" + r.Key }

// JSON returns the leaf value that holds r.
func (r Ref) JSON() string {
	b, _ := json.Marshal(map[string]string{refMember: r.String()})
	return string(b)
}

// refMember is the one member of a reference's object.
const refMember = "$ref"

// RefOf returns the reference value holds, if value (JSON text) is one.
func RefOf(value string) (Ref, bool) {
	v := []byte(strings.TrimSpace(value))
	if !isRef(v) {
		return Ref{}, false
	}
	var obj map[string]string
	if json.Unmarshal(v, &obj) != nil {
		return Ref{}, false
	}
	return ParseRef(obj[refMember])
}

// ParseRef parses "KIND NAMESPACE/NAME#KEY".
func ParseRef(s string) (Ref, bool) {
	kind, rest, ok := strings.Cut(s, " ")
	if !ok {
		return Ref{}, false
	}
	obj, key, ok := strings.Cut(rest, "#")
	if !ok {
		return Ref{}, false
	}
	ns, name, ok := strings.Cut(obj, "/")
	if !ok || kind == "" || ns == "" || name == "" || key == "" {
		return Ref{}, false
	}
	return Ref{Kind: kind, Namespace: ns, Name: name, Key: key}, true
}

// isRef reports whether v, JSON text, is an object whose one member is
// "$ref" holding a string: a reference, a leaf that Flatten does not
// descend into.
func isRef(v []byte) bool {
	if len(v) == 0 || v[0] != '{' || !bytes.Contains(v, []byte(`"$ref"`)) {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil || len(obj) != 1 {
		return false
	}
	raw, ok := obj[refMember]
	return ok && len(raw) > 0 && raw[0] == '"'
}

// RefReader reads what a reference names; the caller's, so that strata
// reads no Secret on its own.
type RefReader func(ctx context.Context, r Ref) ([]byte, error)

// ResolveRefs returns values with every reference in them, a leaf or
// nested in a leaf (an element of a keyed list), replaced by what read
// gives for it, as a JSON string. It is the one step that reads
// referenced content, and it happens only when the caller asks; an error
// names the reference and the key, never content.
func ResolveRefs(ctx context.Context, values map[string]string, read RefReader) (map[string]string, error) {
	out := make(map[string]string, len(values))
	for k, v := range values {
		if !strings.Contains(v, refMember) {
			out[k] = v
			continue
		}
		var node any
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&node); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		resolved, err := resolveNode(ctx, k, node, read)
		if err != nil {
			return nil, err
		}
		b, err := marshal(resolved)
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

func resolveNode(ctx context.Context, key string, node any, read RefReader) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		if s, ok := n[refMember].(string); ok && len(n) == 1 {
			r, ok := ParseRef(s)
			if !ok {
				return nil, fmt.Errorf("%s: %q is not a reference (KIND NAMESPACE/NAME#KEY)", key, s)
			}
			data, err := read(ctx, r)
			if err != nil {
				return nil, fmt.Errorf("%s: reading %s: %w", key, r, err)
			}
			return string(data), nil
		}
		for m, v := range n {
			r, err := resolveNode(ctx, key, v, read)
			if err != nil {
				return nil, err
			}
			n[m] = r
		}
	case []any:
		for i, v := range n {
			r, err := resolveNode(ctx, key, v, read)
			if err != nil {
				return nil, err
			}
			n[i] = r
		}
	}
	return node, nil
}
