package merge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// container is an object or array checkKeys is inside. Its path is
// written only for an error, from the stack: a deep document costs memory
// linear in its depth, not quadratic.
type container struct {
	array  bool
	index  int             // arrays: the element under way
	member string          // objects: the member under way
	keys   []string        // objects: the members seen, while few
	set    map[string]bool // objects: the members seen, once many
}

// pathOf returns the path of the innermost container of stack.
func pathOf(stack []container) string {
	var b strings.Builder
	for _, c := range stack[:len(stack)-1] {
		b.WriteByte('/')
		if c.array {
			b.WriteString(strconv.Itoa(c.index))
		} else {
			b.WriteString(escape(c.member))
		}
	}
	return b.String()
}

// maxCheckDepth is encoding/json's nesting limit: a deeper document is
// left to the decoder, which refuses it.
const maxCheckDepth = 10000

// seen records member key and reports whether c had it already.
func (c *container) seen(key string) bool {
	if c.set != nil {
		dup := c.set[key]
		c.set[key] = true
		return dup
	}
	for _, k := range c.keys {
		if k == key {
			return true
		}
	}
	c.keys = append(c.keys, key)
	if len(c.keys) > 8 {
		c.set = make(map[string]bool, 16)
		for _, k := range c.keys {
			c.set[k] = true
		}
		c.keys = nil
	}
	return false
}

// checkKeys returns an error naming the first object member that doc, a
// JSON text, gives twice, at any depth: encoding/json keeps the last of
// two, and a configuration that says one thing twice is a mistake to
// refuse, not to guess at. Malformed JSON is left for the decoder to
// report. The scan is one pass, and an object keeps a set of its members
// only once it has more than a few, so a hostile object of many members
// costs time linear in its size.
func checkKeys(doc []byte) error {
	var stack []container
	expectKey := false
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '{', '[':
			if len(stack) == maxCheckDepth {
				return nil
			}
			stack = append(stack, container{array: doc[i] == '['})
			expectKey = doc[i] == '{'
		case '}', ']':
			if len(stack) == 0 {
				return nil
			}
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].array {
					stack[n-1].index++
				} else {
					expectKey = true
				}
			}
		case '"':
			end, escaped := i+1, false
			for ; end < len(doc) && doc[end] != '"'; end++ {
				if doc[end] == '\\' {
					escaped = true
					end++
				}
			}
			if end >= len(doc) {
				return nil
			}
			if expectKey && len(stack) > 0 {
				key := string(doc[i+1 : end])
				if escaped && json.Unmarshal(doc[i:end+1], &key) != nil {
					return nil
				}
				c := &stack[len(stack)-1]
				if c.seen(key) {
					return fmt.Errorf("%s: member %s is given twice", displayKey(pathOf(stack)), strconv.Quote(key))
				}
				c.member = key
				expectKey = false
			}
			i = end
		}
	}
	return nil
}
