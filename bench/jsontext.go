package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/stratacfg/strata/merge"
)

// JSONTextFlatten is merge.Flatten (without keyed lists) written over
// jsontext's streaming decoder, the tokenizer of json/v2: Go 1.27's
// encoding/json/jsontext, which github.com/go-json-experiment/json serves
// on Go 1.26. It exists to measure whether strata's own scanner should
// give way to it.
func JSONTextFlatten(doc []byte) (map[string]string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(doc))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, errors.New("not a JSON object")
	}
	out := map[string]string{}
	if err := flattenMembers(dec, out, "", nil); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, fmt.Errorf("after the object: %v", err)
	}
	return out, nil
}

// flattenMembers flattens the members of the object whose start dec has
// read, at prefix, up to and including its end; first is the name of its
// first member when the caller read it already.
func flattenMembers(dec *jsontext.Decoder, out map[string]string, prefix string, first *string) error {
	for {
		var name string
		if first != nil {
			name, first = *first, nil
		} else {
			if dec.PeekKind() == '}' {
				_, err := dec.ReadToken()
				return err
			}
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			name = tok.String()
		}
		if err := flattenMember(dec, out, merge.Child(prefix, name)); err != nil {
			return err
		}
	}
}

// flattenMember flattens the value dec is at, at key.
func flattenMember(dec *jsontext.Decoder, out map[string]string, key string) error {
	if dec.PeekKind() != '{' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if len(v) > 0 && v[0] == '[' {
			v = v.Clone()
			if err := v.Compact(); err != nil {
				return err
			}
		}
		out[key] = string(v)
		return nil
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if dec.PeekKind() == '}' { // an empty object: no leaves
		_, err := dec.ReadToken()
		return err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	name := tok.String()
	if name != "$ref" || dec.PeekKind() != '"' {
		return flattenMembers(dec, out, key, &name)
	}
	// {"$ref": "..."} alone is a reference, a leaf.
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	ref := string(v)
	if dec.PeekKind() == '}' {
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		out[key] = `{"$ref":` + ref + `}`
		return nil
	}
	out[merge.Child(key, name)] = ref
	return flattenMembers(dec, out, key, nil)
}
