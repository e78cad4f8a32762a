package yamljson

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestAliasBombsRefusedUnexpanded: a document whose aliases expand it far
// past its size (one large scalar aliased many times, which go-yaml's
// ratio guard lets through; nested aliases, "billion laughs"; a
// self-referencing anchor) is refused before anything is expanded, so
// refusing it costs about its own size, not the gigabytes it asks for.
func TestAliasBombsRefusedUnexpanded(t *testing.T) {
	laughs := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i, prev := 'b', 'a'; i <= 'j'; i, prev = i+1, i {
		laughs += string(i) + ": &" + string(i) + " [" + strings.Repeat("*"+string(prev)+",", 8) + "*" + string(prev) + "]\n"
	}
	for name, doc := range map[string]string{
		"one scalar aliased 40,000 times": "a: &a " + strings.Repeat("x", 256<<10) + "\nlist:\n" + strings.Repeat("- *a\n", 40_000),
		"billion laughs":                  laughs,
		"an anchor inside itself":         "a: &a [1, *a]\n",
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := ToJSON([]byte(doc), Limit(len(doc)))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrAliases) {
			t.Errorf("%s: %v, want ErrAliases", name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("%s: refusing it allocated %d MiB", name, alloc>>20)
		}
	}
}

// TestConvertsAsSigsYAML: below the limit, a document converts exactly as
// sigs.k8s.io/yaml converts it, aliases, anchors in strings and globs
// included, strict or not.
func TestConvertsAsSigsYAML(t *testing.T) {
	for _, doc := range []string{
		"a: 1\nb: [x, y]\n",
		"defaults: &d {cpu: 1, memory: 2Gi}\nx: *d\ny: *d\n",
		"pattern: \"*.go\"\nurl: http://x/?a=1&b=2\n",
		"pattern: *.go\n", // an alias to no anchor: the converter's error
		"a: 1\na: 2\n",    // a duplicate: strict refuses
		"{\"json\": [1, 2]}",
		"a: &a [\n", // no YAML
	} {
		for _, strict := range []bool{false, true} {
			convert, ours := yaml.YAMLToJSON, ToJSON
			if strict {
				convert, ours = yaml.YAMLToJSONStrict, ToJSONStrict
			}
			want, werr := convert([]byte(doc))
			got, err := ours([]byte(doc), Limit(len(doc)))
			if string(got) != string(want) || (err == nil) != (werr == nil) {
				t.Errorf("%q strict=%t: %s, %v; sigs.k8s.io/yaml: %s, %v", doc, strict, got, err, want, werr)
			}
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte("a: &a [1, 2]\nb: [*a, *a]\n"))
	f.Add([]byte("a: &a x\nb: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if j, _ := json.Marshal(string(data)); jsonLen(string(data)) != len(j) {
			t.Fatalf("jsonLen(%q) = %d, encoding/json writes %d bytes", data, jsonLen(string(data)), len(j))
		}
		const limit = 1 << 16
		if Check(data, limit) != nil {
			return
		}
		j, err := yaml.YAMLToJSON(data)
		if err == nil && len(j) > 4*limit {
			t.Fatalf("passed the check at %d bytes, and expands to %d", limit, len(j))
		}
	})
}

// TestUnparsable: a document the node parser cannot read is left to the
// converter when it defines no anchor, and refused as unbounded, naming
// the parser's error, when it might.
func TestUnparsable(t *testing.T) {
	glob := "# reads *.yaml\nport: [1,\n"
	if err := Check([]byte(glob), Limit(len(glob))); err != nil {
		t.Errorf("a glob in a broken document: %v, want the converter's error", err)
	}
	anchored := "# reads *.yaml; see https://example.com/doc?a=1&b=2\nport: [1,\n"
	if err := Check([]byte(anchored), Limit(len(anchored))); !errors.Is(err, ErrUnbounded) || !errors.Is(err, ErrAliases) || !strings.Contains(err.Error(), "yaml: line 2") {
		t.Errorf("a broken document that might hold an anchor: %v, want ErrUnbounded and the parser's error", err)
	}
}

// TestEscapingReckoned: what encoding/json writes as six bytes (<, >, &,
// control characters) is reckoned so: a scalar of them aliased past the
// limit once escaped is refused, where it passed at a sixth of its size.
func TestEscapingReckoned(t *testing.T) {
	for name, doc := range map[string]string{
		"< aliased 14 times":    "a: &a " + strings.Repeat("<", 64<<10) + "\nb: [" + strings.Repeat("*a,", 13) + "*a]\n",
		"NULs aliased 20 times": "a: &a \"" + strings.Repeat(`\0`, 48<<10) + "\"\nb: [" + strings.Repeat("*a,", 19) + "*a]\n",
	} {
		limit := Limit(len(doc))
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil || len(j) <= limit {
			t.Fatalf("%s: %d bytes of JSON, %v: the case is wrong", name, len(j), err)
		}
		if err := Check([]byte(doc), limit); !errors.Is(err, ErrAliases) {
			t.Errorf("%s: %d bytes of JSON at a limit of %d: %v, want ErrAliases", name, len(j), limit, err)
		}
	}
	for _, s := range []string{"plain", `a "quoted" \\ one`, "<&>\x00\n", "é€😀", "\xff\xfe", "\u2028"} {
		j, _ := json.Marshal(s)
		if got := jsonLen(s); got != len(j) {
			t.Errorf("jsonLen(%q) = %d, encoding/json writes %d bytes", s, got, len(j))
		}
	}
}

// TestSingle counts documents as a decoder of documents does: empty ones
// left out.
func TestSingle(t *testing.T) {
	for in, want := range map[string]bool{
		"a: 1\n": true, "": true, "---\na: 1\n---\n": true, "# only\n---\na: 1\n": true,
		"a: 1\n---\nb: 2\n": false, "{a: 1}\n---\n[1]\n": false, "a: &x 1\n---\nb: *x\n": false,
	} {
		if got := Single([]byte(in)); got != want {
			t.Errorf("Single(%q) = %v, want %v", in, got, want)
		}
	}
}
