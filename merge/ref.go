package merge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Ref is a value named instead of given: the key of a Secret, whose
// content strata never reads unless asked. A layer holds it as the value
// {"$ref":"secret NAMESPACE/NAME#KEY"} (Ref.JSON), a leaf or inside one (an
// element of a keyed list), which merges like any other value: a
// reference in a higher layer beats a literal below, a literal beats a
// reference below, and the result keeps exactly one of the two. Wherever
// strata shows it (provenance, --explain, an error) it is that text, never
// the content.
//
// Only the layer's producer makes a reference, by naming the key in
// Layer.Refs: a typed valueFrom of an object the operator controls. The
// same text in any other value is a literal, whoever wrote it: a tenant
// who writes {"$ref":"secret kube-system/admin-token#token"} into a value
// gets that object, never the Secret (Result.RefOf, Result.ResolveRefs).
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

// refOf returns the reference value holds, if value (JSON text) has the
// shape of one.
func refOf(value string) (Ref, bool) {
	v := []byte(strings.TrimSpace(value))
	if !isRef(v) {
		return Ref{}, false
	}
	var obj map[string]string
	if json.Unmarshal(v, &obj) != nil {
		return Ref{}, false
	}
	return parseRef(obj[refMember])
}

// LooksLikeRef reports whether value, JSON text, holds anything with the
// shape of a reference, at any depth, a string that holds one as JSON
// text included (a string field, or a ConfigMap value a Parsed kind reads
// as written): a policy that refuses such literals outright
// (layers/namespaced/tenancy.Policy.RefuseRefLiterals) asks it.
func LooksLikeRef(value string) bool {
	if !strings.Contains(value, refMember) {
		return false
	}
	var node any
	if json.Unmarshal([]byte(value), &node) != nil {
		return false
	}
	return holdsRef(node)
}

func holdsRef(node any) bool {
	switch n := node.(type) {
	case map[string]any:
		if _, ok := n[refMember].(string); ok && len(n) == 1 {
			return true
		}
		for _, v := range n {
			if holdsRef(v) {
				return true
			}
		}
	case []any:
		for _, v := range n {
			if holdsRef(v) {
				return true
			}
		}
	case string:
		return LooksLikeRef(n)
	}
	return false
}

// parseRef parses "KIND NAMESPACE/NAME#KEY".
func parseRef(s string) (Ref, bool) {
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
// "$ref" holding a string.
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

// holdsRefs reports whether the effective value of key was set by a
// layer that wrote references there.
func (r *Result) holdsRefs(key string) bool {
	r.settle()
	e, ok := r.get(key)
	if !ok {
		return false
	}
	return r.layers[r.winner(key, e)].Refs[key]
}

// RefOf returns the reference v is, where v is key's effective value or a
// value inside it (an element's member), when the layer whose value of
// key is effective wrote references there (Layer.RefOf). Anywhere else
// the same text is a literal: RefOf reports false.
func (r *Result) RefOf(key, v string) (Ref, bool) {
	r.settle()
	e, ok := r.get(key)
	if !ok {
		return Ref{}, false
	}
	return r.layers[r.winner(key, e)].RefOf(key, v)
}

// RefOf returns the reference v is, where v is l's value of key or a value
// inside it, when l wrote references there (Refs): a value a layer lost
// with (Explanation.Shadowed) is a reference only if its own layer says
// so. Anywhere else the same text is a literal: RefOf reports false.
func (l *Layer) RefOf(key, v string) (Ref, bool) {
	if !l.Refs[key] {
		return Ref{}, false
	}
	return refOf(v)
}

// RefReader reads what a reference names; the caller's, so that strata
// reads no Secret on its own.
type RefReader func(ctx context.Context, r Ref) ([]byte, error)

// ResolveRefs returns r's effective values with every reference in them,
// a value or inside one, replaced by what read gives for it, as a JSON
// string. It is the one step that reads referenced content, and it
// happens only when the caller asks. Only references a layer's producer
// wrote (Layer.Refs) are read: a literal with a reference's shape stays
// what it is. A reference to a namespace not in namespaces, those the
// caller may read for whoever wrote the layers (a Plugin's own), is an
// error and nothing is read; so is one read fails. An error names the
// key and the reference, never content.
func (r *Result) ResolveRefs(ctx context.Context, namespaces []string, read RefReader) (map[string]string, error) {
	values := r.Values()
	out := make(map[string]string, len(values))
	for k, v := range values {
		if !r.holdsRefs(k) || !strings.Contains(v, refMember) {
			out[k] = v
			continue
		}
		var node any
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&node); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		resolved, err := resolveNode(ctx, k, node, namespaces, read)
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

// ErrRefNamespace is wrapped by the error for a reference to a namespace
// its reader may not read.
var ErrRefNamespace = errors.New("a reference to a namespace that may not be read")

func resolveNode(ctx context.Context, key string, node any, namespaces []string, read RefReader) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		if s, ok := n[refMember].(string); ok && len(n) == 1 {
			r, ok := parseRef(s)
			if !ok {
				return nil, fmt.Errorf("%s: %q is not a reference (KIND NAMESPACE/NAME#KEY)", key, s)
			}
			if !slices.Contains(namespaces, r.Namespace) {
				return nil, fmt.Errorf("%s: %s: %w: only %s may be read here", key, r, ErrRefNamespace, strings.Join(namespaces, ", "))
			}
			data, err := read(ctx, r)
			if err != nil {
				return nil, fmt.Errorf("%s: reading %s: %w", key, r, err)
			}
			return string(data), nil
		}
		for m, v := range n {
			r, err := resolveNode(ctx, key, v, namespaces, read)
			if err != nil {
				return nil, err
			}
			n[m] = r
		}
	case []any:
		for i, v := range n {
			r, err := resolveNode(ctx, key, v, namespaces, read)
			if err != nil {
				return nil, err
			}
			n[i] = r
		}
	}
	return node, nil
}
