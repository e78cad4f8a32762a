package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
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

// Unflatten builds the JSON object whose leaves are values. Tombstones are
// left out. A key that is both a leaf and the ancestor of another key is an
// error; Merge never produces one. Member order is sorted, so the output is
// deterministic.
//
// The keys are sorted by their segments, so that the members of one object
// are adjacent and in the order encoding/json writes a map's, and the
// document is written in one pass, each value as it is (compacted when it
// holds whitespace): no tree of maps is built and encoded again.
func Unflatten(values map[string]string) ([]byte, error) {
	type leaf struct{ key, value string }
	leaves := make([]leaf, 0, len(values))
	size, escaped := 2, false
	for k, v := range values {
		if v == Tombstone {
			continue
		}
		if !validPointer(k) {
			return nil, fmt.Errorf("%q is not a JSON pointer to a member", k)
		}
		escaped = escaped || strings.IndexByte(k, '~') >= 0
		leaves = append(leaves, leaf{k, v})
		size += len(k) + len(v) + 4
	}
	compare := comparePointers
	if escaped {
		compare = func(a, b string) int {
			sa, _ := Segments(a)
			sb, _ := Segments(b)
			return slices.Compare(sa, sb)
		}
	}
	slices.SortFunc(leaves, func(a, b leaf) int { return compare(a.key, b.key) })
	buf := make([]byte, 0, size)
	buf = append(buf, '{')
	open := ""    // the innermost object open, "" for the document
	first := true // no member written in it yet
	for i, l := range leaves {
		k := l.key
		if i+1 < len(leaves) && IsAncestor(k, leaves[i+1].key) {
			return nil, fmt.Errorf("%s is set as a value and also has member %s", k, leaves[i+1].key)
		}
		cut := strings.LastIndexByte(k, '/')
		parent, name := k[:cut], k[cut+1:]
		for open != parent && !IsAncestor(open, parent) {
			buf = append(buf, '}')
			open = open[:strings.LastIndexByte(open, '/')]
			first = false
		}
		for open != parent {
			seg, _, _ := strings.Cut(parent[len(open)+1:], "/")
			if !first {
				buf = append(buf, ',')
			}
			buf = appendString(buf, unescaped(seg))
			buf = append(buf, ':', '{')
			open += "/" + seg
			first = true
		}
		if !first {
			buf = append(buf, ',')
		}
		buf = appendString(buf, unescaped(name))
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, l.value); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		first = false
	}
	for ; open != ""; open = open[:strings.LastIndexByte(open, '/')] {
		buf = append(buf, '}')
	}
	return append(buf, '}'), nil
}

// comparePointers orders JSON pointers that hold no escape by their
// segments, as encoding/json orders a map's members: an object's members
// are adjacent, and an ancestor comes before what lies under it. A
// separator sorts before any byte.
func comparePointers(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		switch {
		case ca == cb:
			continue
		case ca == '/':
			return -1
		case cb == '/', ca > cb:
			return 1
		}
		return -1
	}
	return len(a) - len(b)
}

// validPointer reports whether key is a JSON pointer to a member: it
// starts with "/", and every "~" is "~0" or "~1".
func validPointer(key string) bool {
	if key == "" || key[0] != '/' {
		return false
	}
	for i := strings.IndexByte(key, '~'); i >= 0; {
		if i+1 == len(key) || key[i+1] != '0' && key[i+1] != '1' {
			return false
		}
		next := strings.IndexByte(key[i+2:], '~')
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return true
}

// unescaped is seg, a segment of a pointer Segments accepts, unescaped.
func unescaped(seg string) string {
	u, _ := unescape(seg)
	return u
}

// appendValue appends v, JSON text, compact: as it is when it holds no
// whitespace, compacted otherwise; JSON either way. v is checked where it
// was appended, not converted to a slice of its own: on Go 1.27's
// encoding/json (json/v2) that conversion allocates once per value.
func appendValue(buf []byte, v string) ([]byte, error) {
	if !strings.ContainsAny(v, " \t\n\r") {
		start := len(buf)
		buf = append(buf, v...)
		if !json.Valid(buf[start:]) {
			return nil, fmt.Errorf("%q is not JSON", v)
		}
		return buf, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(v)); err != nil {
		return nil, err
	}
	return append(buf, b.Bytes()...), nil
}

// appendString appends s as a JSON string, as encoding/json writes it
// without HTML escaping.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			var e bytes.Buffer
			enc := json.NewEncoder(&e)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s)
			return append(buf, bytes.TrimSuffix(e.Bytes(), []byte("\n"))...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
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
