// Package yamljson turns YAML into JSON as sigs.k8s.io/yaml does, after
// bounding what the document's aliases expand to.
//
// sigs.k8s.io/yaml writes every alias out in full: a document of 85 KB
// whose list aliases one 64 KiB scalar 4,000 times becomes 262 MB of
// JSON, and a file of 2 MiB, under every size limit, can ask for
// hundreds of gigabytes. go-yaml's own guard bounds the ratio of aliases
// to other nodes, not bytes, so one large scalar aliased many times
// passes it. Each function here first reckons, without expanding
// anything, how large the JSON would be, and refuses a document past its
// limit before converting it.
package yamljson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// ErrAliases is wrapped by the error for a document whose aliases expand
// it past its limit, and for one whose aliases cannot be bounded.
var ErrAliases = errors.New("excessive YAML aliasing")

// ErrUnbounded, which wraps ErrAliases, is wrapped by the error for a
// document whose aliases cannot be bounded: the parser that would reckon
// them cannot read it. Callers report it as a document that is no YAML.
var ErrUnbounded = fmt.Errorf("%w: the document does not parse as YAML, so its aliases cannot be bounded", ErrAliases)

// Limit is the bound most callers give: four times the document's size,
// and at least 1 MiB, room for anchors a configuration reuses (a block of
// defaults) and none for a bomb.
func Limit(size int) int { return max(4*size, 1<<20) }

// ToJSON is yaml.YAMLToJSON of data, refused when data's aliases expand
// it past limit bytes.
func ToJSON(data []byte, limit int) ([]byte, error) {
	if err := Check(data, limit); err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(data)
}

// ToJSONStrict is yaml.YAMLToJSONStrict (a key twice in a mapping is an
// error) of data, refused when data's aliases expand it past limit bytes.
func ToJSONStrict(data []byte, limit int) ([]byte, error) {
	if err := Check(data, limit); err != nil {
		return nil, err
	}
	return yaml.YAMLToJSONStrict(data)
}

// Single reports whether data holds one YAML document at most, empty
// ones left out, as a decoder of documents counts them: an explicit null
// counts, and so does a document after the first that does not parse. It
// expands no alias.
func Single(data []byte) bool {
	d := yamlv3.NewDecoder(bytes.NewReader(data))
	n := 0
	for n <= 1 {
		var doc yamlv3.Node
		if err := d.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) && n > 0 {
				n++ // what follows the first is refused by the decoder: a document all the same
			}
			break
		}
		if len(doc.Content) > 0 && !(doc.Content[0].Tag == "!!null" && doc.Content[0].Value == "") {
			n++
		}
	}
	return n <= 1
}

// Check returns an error wrapping ErrAliases when the first YAML document
// of data, its aliases expanded, would be more than about limit bytes of
// JSON. A document with no alias ('*') costs a scan; one with aliases is
// parsed into nodes, which expands nothing, and each anchor's size is
// reckoned once. A document that parser cannot read, but that might
// define an anchor ('&'), is refused with an error that wraps
// ErrUnbounded and the parser's: a few nested aliases can expand a small
// document past any limit, and go-yaml's guard lets up to 100 through.
func Check(data []byte, limit int) error {
	_, err := reckon(data, limit)
	return err
}

// Budget is one limit shared by the documents of an input (a file, a set
// of manifests): each document's aliases take what they expand to from
// it, so that many documents, each under the limit, do not expand to
// many times it.
type Budget struct{ left int }

// NewBudget returns a budget of limit bytes of JSON.
func NewBudget(limit int) *Budget { return &Budget{left: limit} }

// Check is Check of doc against what is left of b, which it takes.
func (b *Budget) Check(doc []byte) error {
	size, err := reckon(doc, b.left)
	b.left -= size
	return err
}

// reckon is Check returning, too, about how many bytes of JSON data's
// aliases expand it to (0 for a document with no alias, whose size its
// reader bounds).
func reckon(data []byte, limit int) (int, error) {
	if bytes.IndexByte(data, '*') < 0 {
		return 0, nil
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		if bytes.IndexByte(data, '&') < 0 {
			return 0, nil // no anchor, so no alias: the converter reports the rest
		}
		return 0, fmt.Errorf("%w: %w", ErrUnbounded, err)
	}
	r := reckoner{limit: limit, sizes: map[*yamlv3.Node]int{}}
	n := r.size(&doc)
	if n > limit {
		return n, fmt.Errorf("%w: aliases expand the document to more than %d bytes of JSON", ErrAliases, limit)
	}
	return n, nil
}

// reckoner sizes nodes as JSON, about: a scalar its text as encoding/json
// escapes it and quotes, a collection its members and their separators.
// Sizes saturate just past the limit, so that no sum overflows.
type reckoner struct {
	limit int
	sizes map[*yamlv3.Node]int // of the anchored nodes sized so far
}

func (r *reckoner) size(n *yamlv3.Node) int {
	if n == nil {
		return 0
	}
	if n.Kind == yamlv3.AliasNode {
		return r.size(n.Alias)
	}
	if n.Anchor != "" {
		if s, ok := r.sizes[n]; ok {
			return s
		}
		r.sizes[n] = r.limit + 1 // an alias inside its own anchor
	}
	s := 0
	switch n.Kind {
	case yamlv3.ScalarNode:
		s = min(jsonLen(n.Value), r.limit+1)
	default:
		s = 2
		for _, c := range n.Content {
			s = min(s+r.size(c)+1, r.limit+1)
		}
	}
	if n.Anchor != "" {
		r.sizes[n] = s
	}
	return s
}

// jsonLen is the length of s as a JSON string: encoding/json writes <, >,
// &, control characters, U+2028, U+2029 and each byte of invalid UTF-8
// as six bytes, a quote, a backslash, \n, \r, \t, \b and \f as two.
func jsonLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n, i = n+2, i+1
		case c == '<' || c == '>' || c == '&' || c < 0x20:
			n, i = n+6, i+1
		case c < utf8.RuneSelf:
			n, i = n+1, i+1
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
				n += 6
			default:
				n += size
			}
			i += size
		}
	}
	return n
}
