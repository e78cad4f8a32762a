package scheme_test

import (
	"strings"
	"testing"

	"github.com/stratacfg/strata/scheme"
)

// TestStrictList: a v1 List wrapper is decoded as strictly as its items,
// as apimachinery's strict decoder decodes it: items named twice (in JSON,
// which no YAML step checks), or a member a List has not, are refused in
// strict mode, named, and warned of in warn mode.
func TestStrictList(t *testing.T) {
	c := codec(t)
	item := func(port string) string {
		return `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","port":` + port + `}`
	}
	for _, in := range []string{
		`{"apiVersion":"v1","kind":"List","items":[` + item(`"x"`) + `],"items":[` + item("1") + `]}`,
		"apiVersion: v1\nkind: List\nitemz: 5\nitems:\n- " + item("1") + "\n",
		`{"apiVersion":"v1","kind":"List","metadata":{"bogus":1},"items":[` + item("1") + `]}`,
	} {
		_, err := c.DecodeAll([]byte(in), scheme.DecodeOptions{Source: "l.json", Mode: scheme.Strict})
		if err == nil || !strings.Contains(err.Error(), "l.json") || !strings.Contains(err.Error(), "the List:") {
			t.Errorf("%s: %v; want a strict error naming the List", in, err)
		}
		docs, err := c.DecodeAll([]byte(in), scheme.DecodeOptions{Source: "l.json", Mode: scheme.Warn})
		if err != nil || len(docs) != 1 || len(docs[0].Warnings) == 0 {
			t.Errorf("%s in warn mode: %v, %v", in, docs, err)
		}
	}
	if docs, err := c.DecodeAll([]byte(`{"apiVersion":"v1","kind":"List","metadata":{},"items":[`+item("1")+`]}`), scheme.DecodeOptions{Source: "l.json", Mode: scheme.Strict}); err != nil || len(docs) != 1 {
		t.Errorf("a List with metadata: %v, %v", docs, err)
	}
}
