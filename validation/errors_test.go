package validation

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/internal/mergeengine"
	"github.com/stratacfg/strata/merge"
)

// TestErrorListIsShort validates a configuration with a hundred thousand
// invalid entries, each quoting a long value: the message lists twenty,
// each cut, and counts the rest.
func TestErrorListIsShort(t *testing.T) {
	long := strings.Repeat("v", 100_000)
	var errs field.ErrorList
	for i := 0; i < 100_000; i++ {
		errs = append(errs, field.Invalid(field.NewPath("allowedOrigins").Index(i), long, "must be an origin"))
	}
	l := Attribute(errs, merge.Merge(&merge.Layer{Source: merge.Source{Origin: "file", Name: "c.yaml"}, Values: map[string]string{"/allowedOrigins": `["a"]`}}), nil)
	msg := l.Error()
	if len(msg) > 20*600 || strings.Count(msg, "\n") != 20 || !strings.HasSuffix(msg, "… and 99980 more") || !strings.HasPrefix(msg, "file c.yaml: allowedOrigins[0]: Invalid value: ") {
		t.Errorf("message of %d bytes:\n%.2000s", len(msg), msg)
	}
}

// TestAttributeNamesKeyedElements: an index into a keyed list counts the
// list of the object validated, which no file wrote; the error names the
// element by its key instead, and the layer that gave it.
func TestAttributeNamesKeyedElements(t *testing.T) {
	lists := merge.Lists{"/targets": "name", "/groups/*/members": "id"}
	r := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: "file", Name: "c.yaml"}, Lists: lists, Values: map[string]string{
			"/targets/aaa":           `{"name":"aaa","url":"http://a"}`,
			"/targets/zzz":           `{"name":"zzz","url":"ftp://bad"}`,
			"/groups/g/members/a~1b": `{"id":"a/b"}`,
			"/ports":                 `[1,2,3]`,
		}},
		&merge.Layer{Source: merge.Source{Origin: "drop-in", Name: "50.yaml"}, Lists: lists, Values: map[string]string{
			"/targets/mmm": `{"name":"mmm","url":"ftp://worse"}`,
		}},
	)
	doc, err := r.Document()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"groups":{"g":{"members":[{"id":"a/b"}]}},"ports":[1,2,3],"targets":[{"name":"aaa","url":"http://a"},{"name":"mmm","url":"ftp://worse"},{"name":"zzz","url":"ftp://bad"}]}`; string(doc) != want {
		t.Errorf("Document:\n%s\nwant\n%s", doc, want)
	}
	var validated map[string]any
	if err := json.Unmarshal(doc, &validated); err != nil {
		t.Fatal(err)
	}
	// Defaulting put an element of its own first: indexes count it.
	defaulted := map[string]any{}
	for k, v := range validated {
		defaulted[k] = v
	}
	defaulted["targets"] = append([]any{map[string]any{"name": "default", "url": "ftp://default"}}, validated["targets"].([]any)...)
	for _, c := range []struct {
		path      string
		validated any
		want, key string
	}{
		{"targets[2].url", validated, `file c.yaml: targets[name=zzz].url: Invalid value: "x": bad`, "/targets/zzz"},
		{"targets[1].url", validated, `drop-in 50.yaml: targets[name=mmm].url: Invalid value: "x": bad`, "/targets/mmm"},
		{"targets[3].url", validated, `targets[3].url: Invalid value: "x": bad`, "/targets/3/url"}, // past the list: as it was
		{"groups[g].members[0]", validated, `file c.yaml: groups[g].members[id=a/b]: Invalid value: "x": bad`, "/groups/g/members/a~1b"},
		{"ports[1]", validated, `file c.yaml: ports[1]: Invalid value: "x": bad`, "/ports"}, // not a keyed list
		{"targets[0].url", defaulted, `targets[name=default].url: Invalid value: "x": bad`, "/targets/default/url"},
		{"targets[3].url", defaulted, `file c.yaml: targets[name=zzz].url: Invalid value: "x": bad`, "/targets/zzz"},
		{"targets[1].url", nil, `targets[1].url: Invalid value: "x": bad`, "/targets/1/url"}, // nothing to read the keys from
	} {
		fp, err := parsePath(c.path)
		if err != nil {
			t.Fatal(err)
		}
		errs := field.ErrorList{field.Invalid(fp, "x", "bad")}
		got := Attribute(errs, r, c.validated)
		if got[0].Error() != c.want || got[0].Key != c.key {
			t.Errorf("%s: %q (key %q), want %q (key %q)", c.path, got[0].Error(), got[0].Key, c.want, c.key)
		}
		if errs[0].Field != c.path {
			t.Errorf("%s: the caller's error was changed to %s", c.path, errs[0].Field)
		}
	}
}

// TestAttributeLooksPastDefaulting: defaulting one member of an element
// refills the element whole; an error in another member is credited to
// the layer that gave that member.
func TestAttributeLooksPastDefaulting(t *testing.T) {
	lists := merge.Lists{"/targets": "name"}
	r := merge.Merge(&merge.Layer{Source: merge.Source{Origin: "drop-in", Name: "50.yaml"}, Lists: lists, Values: map[string]string{
		"/targets/zzz": `{"name":"zzz","url":"ftp://bad"}`,
	}})
	mergeengine.Get[*merge.Result, *merge.Layer, merge.Source]().Fill(r, merge.Source{Origin: "default"}, map[string]string{"/targets/zzz": `{"name":"zzz","url":"ftp://bad","weight":1}`})
	validated := map[string]any{"targets": []any{map[string]any{"name": "zzz", "url": "ftp://bad", "weight": 1}}}
	for _, c := range []struct{ path, want string }{
		{"targets[0].url", `drop-in 50.yaml: targets[name=zzz].url: Invalid value: "x": bad`},
		{"targets[0].weight", `default: targets[name=zzz].weight: Invalid value: "x": bad`},
	} {
		fp, _ := parsePath(c.path)
		if got := Attribute(field.ErrorList{field.Invalid(fp, "x", "bad")}, r, validated); got[0].Error() != c.want {
			t.Errorf("%s: %q, want %q", c.path, got[0].Error(), c.want)
		}
	}
}

// parsePath builds the field.Path a validator would for s.
func parsePath(s string) (*field.Path, error) {
	var p *field.Path
	for s != "" {
		switch {
		case s[0] == '.':
			s = s[1:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			seg := s[1:end]
			if n, err := strconv.Atoi(seg); err == nil {
				p = p.Index(n)
			} else {
				p = p.Key(seg)
			}
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			if p == nil {
				p = field.NewPath(s[:end])
			} else {
				p = p.Child(s[:end])
			}
			s = s[end:]
		}
	}
	return p, nil
}
