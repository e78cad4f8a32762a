// Package merge is strata's model of layered configuration and its
// precedence rules.
//
// A configuration document is held as a Layer: a flat map from RFC 6901 JSON
// pointers into the versioned document to JSON text. Objects are flattened to
// their leaves; arrays and scalars are leaves and replace whole; the value
// null is a tombstone that sends a key back to what lower layers and
// defaulting give it. This is the JSON merge patch of RFC 7386 expressed on
// keys, so merging layers before anything is parsed or defaulted keeps "set
// to false" apart from "unset".
//
// Merge combines layers, most generic first, into a read-only Result that
// records for every effective key which layer won and which it shadowed. A
// Policy on a layer decides which keys that layer may set; every key a
// policy drops is reported with the reason.
//
// The package imports nothing but the standard library (and a hook by
// which strata's own packages reach the engine; see engine.go).
package merge

import "strings"

// Source says where a layer came from. It is a value type; its zero value is
// an unnamed source.
type Source struct {
	// Origin is what kind of place the layer came from, for example
	// "default", "file", "drop-in", "flag" or "namespace".
	Origin string
	// Name says where: a file path, a flag ("--port"), a ConfigMap
	// ("team-a/overrides"). Empty for sources such as defaults.
	Name string
	// Version is the version of the content when the source has one:
	// a resourceVersion or a content hash.
	Version string
	// Compressed says the content was stored gzip'd and was
	// decompressed to be read.
	Compressed bool
}

// String returns the origin and the name, "file /etc/x.yaml", "flag --port",
// or the origin alone when there is no name; " (gzip)" follows a compressed
// source.
func (s Source) String() string {
	out := s.Origin
	if s.Name != "" {
		out += " " + s.Name
	}
	if s.Compressed {
		out += " (gzip)"
	}
	return out
}

// Layer is one source's configuration as raw keys.
type Layer struct {
	Source Source
	// Values maps JSON pointers to compact JSON text. The value "null"
	// (Tombstone) removes the key and everything under it.
	Values map[string]string
	// Refs names the keys of Values whose value is, or holds, a
	// reference the layer's producer wrote (Ref.JSON): a typed valueFrom
	// of an object the operator controls, a field declared to hold
	// references. Only there is a reference one; the same text in any
	// other value is a literal (Result.RefOf). A layer built from what a
	// tenant writes names none.
	Refs map[string]bool
	// Policy, when set, decides which of Values this layer may set.
	Policy Policy
	// Lists are the keyed lists Values were flattened by (Lists.Flatten):
	// Result.Document rebuilds each as an array, and Result.Element names
	// an element of one by its key.
	Lists Lists
}

// Policy decides which keys a layer may set. Implementations must be safe
// for concurrent use.
type Policy interface {
	// Admit returns the zero Refusal when a layer under the policy may
	// set key to value (JSON), and why it may not otherwise.
	Admit(key, value string) Refusal
}

// Refusal is why a policy refuses a key.
type Refusal struct {
	// Reason is one of the policy's few fixed reasons, fit for a metric
	// label; "" admits the key.
	Reason string
	// Field is the pattern of the field the reason is about when it is
	// not the key itself but something under it, which setting the key
	// would replace: a path nested in an object, a locked member.
	Field string
	// Detail, when set, says more than the fixed reason: the bound a
	// value lies beyond ("120 is not at most 60, cluster key max").
	Detail string
}

// Refused reports whether r refuses the key.
func (r Refusal) Refused() bool { return r.Reason != "" }

// Dropped is a key a policy refused, with the layer that tried to set it.
type Dropped struct {
	Source Source
	Key    string
	Value  string
	Reason string
	// Field is the field under Key the reason is about, or "" when it
	// is about Key itself.
	Field string
	// Detail says more than Reason, when the policy does.
	Detail string
}

// Why is the reason, with the detail when there is one.
func (d Dropped) Why() string {
	if d.Detail != "" {
		return d.Reason + ": " + d.Detail
	}
	return d.Reason
}

func (d Dropped) String() string {
	s := d.Source.String() + ": key " + quote(d.Key) + " dropped: " + d.Why()
	if d.Field != "" {
		s += " (field " + d.Field + " under it)"
	}
	return s
}

// Rules is a Policy over key patterns. A pattern is a JSON pointer whose
// segments may be "*" (any one segment); it covers the key it names and
// every key under it.
type Rules struct {
	// Allow lists the patterns a layer may set. Nil allows every key.
	// A key is allowed when it is covered by a pattern; setting an
	// ancestor of an allowed key (which would replace the whole object) is
	// not allowed.
	Allow []string
	// Deny maps patterns a layer may not set to the reason. A key is denied
	// when a pattern covers it or when it is an ancestor of a denied
	// pattern, since setting it would replace what the pattern protects.
	Deny map[string]string
	// NotAllowedReason is the reason reported for a key outside Allow;
	// "not in the list of overridable keys" when empty.
	NotAllowedReason string
}

// Admit implements Policy. A key two Deny patterns refuse is refused by
// the one that covers it, then by the first in sorted order, so that the
// refusal never depends on map order.
func (r *Rules) Admit(key, _ string) Refusal {
	var out Refusal
	best := ""
	for p, reason := range r.Deny {
		ref := Refusal{Reason: reason}
		switch {
		case Covers(p, key):
		case Under(p, key):
			ref.Field = p
		default:
			continue
		}
		if !out.Refused() || ref.Field == "" && out.Field != "" || (ref.Field == "") == (out.Field == "") && p < best {
			out, best = ref, p
		}
	}
	if out.Refused() || r.Allow == nil {
		return out
	}
	for _, p := range r.Allow {
		if Covers(p, key) {
			return Refusal{}
		}
	}
	if r.NotAllowedReason != "" {
		return Refusal{Reason: r.NotAllowedReason}
	}
	return Refusal{Reason: "not in the list of overridable keys"}
}

// Covers reports whether pattern covers key: key is the pointer the pattern
// names or lies under it. A "*" segment in pattern matches any one segment.
func Covers(pattern, key string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == key || IsAncestor(pattern, key)
	}
	for pattern != "" {
		if key == "" || key[0] != '/' || pattern[0] != '/' {
			return false
		}
		pseg, prest := cut(pattern[1:])
		kseg, krest := cut(key[1:])
		if pseg != "*" && pseg != kseg {
			return false
		}
		pattern, key = prest, krest
	}
	return true
}

// Under reports whether pattern names something strictly under key, so
// that setting key replaces it: "/a/b" and "/a/*" are under "/a", "/a" is
// not under "/a". A "*" segment in pattern matches any one segment.
func Under(pattern, key string) bool {
	for key != "" {
		if pattern == "" || pattern[0] != '/' || key[0] != '/' {
			return false
		}
		pseg, prest := cut(pattern[1:])
		kseg, krest := cut(key[1:])
		if pseg != "*" && pseg != kseg {
			return false
		}
		pattern, key = prest, krest
	}
	return pattern != ""
}

func cut(s string) (seg, rest string) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}
