package merge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// errScan says the fast flattener met what it does not read: malformed
// JSON, a member given twice, a keyed list it cannot flatten. The caller
// then flattens the slow way, whose errors say what is wrong.
var errScan = errors.New("not scanned")

// scanner flattens a JSON document in one pass over its bytes, the leaves
// sliced from the input rather than decoded and encoded again: a map of a
// quarter of a million feature gates costs one pass, not four. It finds a
// member given twice as it goes (a leaf by its key already in out, an
// object by the members of its parent that were objects); that, and
// anything else wrong, it leaves to the slow way to say.
type scanner struct {
	l   Lists
	doc []byte
	out map[string]string
}

// flattenScan is Lists.flattenInto of a whole document into a new map by
// one scan, or errScan when the document is not one it reads or is wrong.
func (l Lists) flattenScan(doc []byte) (map[string]string, error) {
	if !utf8.Valid(doc) {
		return nil, errScan
	}
	s := &scanner{l: l, doc: doc, out: make(map[string]string, members(doc))}
	i := s.space(0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, errScan
	}
	end, err := s.object("", i, 0)
	if err != nil {
		return nil, err
	}
	if s.space(end) != len(doc) {
		return nil, errScan
	}
	return s.out, nil
}

// space skips JSON whitespace from i.
func (s *scanner) space(i int) int {
	for i < len(s.doc) {
		switch s.doc[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// maxScanDepth bounds the objects the scan descends into; a deeper
// document is read the slow way, whose decoder has a limit of its own.
// Each level keeps its key, so the scan holds at most this many keys of
// at most this many segments.
const maxScanDepth = 100

// members counts the members of doc's objects, the colons outside its
// strings: what the flattened map may hold, at most.
func members(doc []byte) int {
	n, in := 0, false
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && c == ':':
			n++
		}
	}
	return n
}

// object flattens the object at doc[i], depth objects down, under prefix
// and returns where it ends.
func (s *scanner) object(prefix string, i, depth int) (int, error) {
	if depth == maxScanDepth {
		return 0, errScan
	}
	doc := s.doc
	i = s.space(i + 1)
	var objects map[string]bool // members that were objects
	first := true
	for {
		if i >= len(doc) {
			return 0, errScan
		}
		if doc[i] == '}' && first {
			return i + 1, nil
		}
		name, next, err := s.str(i)
		if err != nil {
			return 0, err
		}
		i = s.space(next)
		if i >= len(doc) || doc[i] != ':' {
			return 0, errScan
		}
		i = s.space(i + 1)
		if i >= len(doc) {
			return 0, errScan
		}
		key := Child(prefix, name)
		if _, set := s.out[key]; set || objects[name] || strings.HasPrefix(name, deleteFromSet) {
			return 0, errScan // a member given twice, or a set's removals: read the slow way
		}
		_, keyed := s.l.keyOf(key)
		switch {
		case doc[i] == '{' && !keyed && !s.ref(i):
			if objects == nil {
				objects = map[string]bool{}
			}
			objects[name] = true
			if i, err = s.object(key, i, depth+1); err != nil {
				return 0, err
			}
		default:
			end, compact, err := s.value(i)
			if err != nil {
				return 0, err
			}
			v := doc[i:end]
			if (doc[i] == '[' || doc[i] == '{') && checkKeys(v) != nil {
				return 0, errScan // a member given twice inside a leaf
			}
			if keyed {
				if objects == nil {
					objects = map[string]bool{}
				}
				objects[name] = true
				if s.l.flattenValue(s.out, key, v) != nil {
					return 0, errScan
				}
			} else if compact {
				s.out[key] = string(v)
			} else {
				var buf bytes.Buffer
				if err := json.Compact(&buf, v); err != nil {
					return 0, errScan
				}
				s.out[key] = buf.String()
			}
			i = end
		}
		first = false
		i = s.space(i)
		if i >= len(doc) {
			return 0, errScan
		}
		switch doc[i] {
		case ',':
			i = s.space(i + 1)
		case '}':
			return i + 1, nil
		default:
			return 0, errScan
		}
	}
}

// ref reports whether the object at doc[i] has a reference's shape, a
// leaf as Flatten keeps it.
func (s *scanner) ref(i int) bool {
	if !bytes.HasPrefix(s.doc[s.space(i+1):], []byte(`"$ref"`)) {
		return false // a reference's one member comes first
	}
	end, _, err := s.value(i)
	return err == nil && isRef(s.doc[i:end])
}

// str reads the string at doc[i], a member's name, and returns it and
// where it ends. A name with escapes other than the common ones is left
// to encoding/json.
func (s *scanner) str(i int) (string, int, error) {
	doc := s.doc
	if doc[i] != '"' {
		return "", 0, errScan
	}
	escaped := false
	j := i + 1
	for ; j < len(doc) && doc[j] != '"'; j++ {
		switch c := doc[j]; {
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return "", 0, errScan
		}
	}
	if j >= len(doc) {
		return "", 0, errScan
	}
	if !escaped {
		return string(doc[i+1 : j]), j + 1, nil
	}
	var name string
	if err := json.Unmarshal(doc[i:j+1], &name); err != nil {
		return "", 0, errScan
	}
	return name, j + 1, nil
}

// value finds where the value at doc[i] ends, checking its grammar, and
// whether it is compact already (no whitespace outside its strings).
func (s *scanner) value(i int) (end int, compact bool, err error) {
	doc := s.doc
	switch c := doc[i]; {
	case c == '"':
		_, end, err := s.str(i)
		return end, true, err
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number(i)
	case c == '[' || c == '{':
		// A composite leaf: its end by its nesting, its grammar by
		// encoding/json (such leaves are few: lists, keyed lists).
		depth, j := 0, i
		compact := true
		for ; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				_, e, err := s.str(j)
				if err != nil {
					return 0, false, err
				}
				j = e - 1
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			case ' ', '\t', '\n', '\r':
				compact = false
			}
			if depth == 0 {
				break
			}
		}
		if j >= len(doc) || !json.Valid(doc[i:j+1]) {
			return 0, false, errScan
		}
		return j + 1, compact, nil
	}
	return 0, false, errScan
}

func (s *scanner) literal(i int, lit string) (int, bool, error) {
	if !bytes.HasPrefix(s.doc[i:], []byte(lit)) {
		return 0, false, errScan
	}
	return i + len(lit), true, nil
}

// number reads a JSON number at doc[i].
func (s *scanner) number(i int) (int, bool, error) {
	doc := s.doc
	j := i
	digits := func() int {
		n := 0
		for j < len(doc) && doc[j] >= '0' && doc[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if doc[j] == '-' {
		j++
	}
	start := j
	if n := digits(); n == 0 || n > 1 && doc[start] == '0' {
		return 0, false, errScan
	}
	if j < len(doc) && doc[j] == '.' {
		j++
		if digits() == 0 {
			return 0, false, errScan
		}
	}
	if j < len(doc) && (doc[j] == 'e' || doc[j] == 'E') {
		j++
		if j < len(doc) && (doc[j] == '+' || doc[j] == '-') {
			j++
		}
		if digits() == 0 {
			return 0, false, errScan
		}
	}
	return j, true, nil
}
