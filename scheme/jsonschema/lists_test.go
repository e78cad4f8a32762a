package jsonschema_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratacfg/strata/internal/testkind/upstreams"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/scheme/jsonschema"
)

// TestKeyedListsLoaderAndSchemaAgree reads a table of keyed list, set
// and appended list cases with the loader (a component's --config) and with the kind's JSON
// Schema: both accept or both refuse each, but for two elements of one
// key, which the loader refuses and a JSON Schema cannot say.
func TestKeyedListsLoaderAndSchemaAgree(t *testing.T) {
	kind, err := scheme.New(upstreams.Config())
	if err != nil {
		t.Fatal(err)
	}
	s, err := jsonschema.For(kind, upstreams.GroupVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &layers.Component[*upstreams.Upstreams]{Name: "lists", Kind: kind}
	dir := t.TempDir()
	const head = "apiVersion: lists.test.strata.dev/v1\nkind: Upstreams\n"
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"elements with their keys", "upstreams:\n- {name: a, url: http://a}\n- {name: b, weight: 2}\n", true},
		{"no list", "upstreams: null\n", true},
		{"an empty list", "upstreams: []\n", true},
		{"a removal", "upstreams:\n- {name: a}\n- {name: c, $patch: delete}\n", true},
		{"an element without its key", "upstreams:\n- {url: http://a}\n", false},
		{"an element with an empty key", "upstreams:\n- {name: \"\", url: http://a}\n", true},
		{"a null element", "upstreams:\n- null\n", false},
		{"an element that is not an object", "upstreams:\n- a\n", false},
		{"a removal without its key", "upstreams:\n- {$patch: delete}\n", false},
		{"a patch that is not a removal", "upstreams:\n- {name: a, $patch: replace}\n", false},
		{"a removal with more fields", "upstreams:\n- {name: a, url: http://a, $patch: delete}\n", true},
		{"a removal with an unknown field", "upstreams:\n- {name: a, urll: http://a, $patch: delete}\n", true},
		{"a removal with a field of the wrong type", "upstreams:\n- {name: a, weight: heavy, $patch: delete}\n", true},
		{"a removal by a key that is not a string", "upstreams:\n- {name: 1, $patch: delete}\n", true},
		{"a removal with a null key", "upstreams:\n- {name: null, $patch: delete}\n", false},
		{"an element with a null key", "upstreams:\n- {name: null, url: http://a}\n", false},
		{"an unknown field in an element", "upstreams:\n- {name: a, urll: http://a}\n", false},
		{"a key of the wrong type", "upstreams:\n- {name: 1}\n", false},
		{"not a list", "upstreams: {name: a}\n", false},
		{"a set", "tags: [a, b]\n", true},
		{"a set with an element twice", "tags: [a, b, a]\n", false},
		{"a set's element of the wrong type", "tags: [1]\n", false},
		{"a set's null element", "tags: [null]\n", false},
		{"a removal from a set", "tags: [a]\n$deleteFromPrimitiveList/tags: [b]\n", true},
		{"a removal from a set of the wrong type", "$deleteFromPrimitiveList/tags: [{x: 1}]\n", false},
		{"a removal from what is no set", "$deleteFromPrimitiveList/hooks: [a]\n", false},
		{"an appended list, an element twice", "hooks: [a, b, a]\n", true},
		{"an appended list's element of the wrong type", "hooks: [{x: 1}]\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(file, []byte(head+tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, loadErr := c.Load(context.Background(), []string{"--config", file})
			schemaErrs := jsonschema.Validate(s, []byte(head+tc.doc))
			if (loadErr == nil) != tc.ok || (len(schemaErrs) == 0) != tc.ok {
				t.Errorf("want ok=%v; the loader: %v; the schema: %q", tc.ok, loadErr, schemaErrs)
			}
		})
	}
	// The one case a JSON Schema cannot say.
	dup := head + "upstreams:\n- {name: a}\n- {name: a, weight: 2}\n"
	file := filepath.Join(dir, "dup.yaml")
	if err := os.WriteFile(file, []byte(dup), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Load(context.Background(), []string{"--config", file}); err == nil || !strings.Contains(err.Error(), `both have name "a"`) {
		t.Errorf("the loader on a duplicate key: %v", err)
	}
	if errs := jsonschema.Validate(s, []byte(dup)); len(errs) != 0 {
		t.Errorf("the schema learned to refuse a duplicate key (%q): the loader and the schema agree on it now; move it into the table", errs)
	}
}
