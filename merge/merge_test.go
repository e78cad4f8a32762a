package merge

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
)

func layer(kind, name string, kv ...string) *Layer {
	l := &Layer{Source: Source{Origin: kind, Name: name}, Values: map[string]string{}}
	for i := 0; i < len(kv); i += 2 {
		l.Values[kv[i]] = kv[i+1]
	}
	return l
}

func TestMergePrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		layers []*Layer
		want   map[string]string
	}{
		{
			name: "later layer wins",
			layers: []*Layer{
				layer("file", "a", "/port", "1", "/name", `"x"`),
				layer("flag", "--port", "/port", "2"),
			},
			want: map[string]string{"/port": "2", "/name": `"x"`},
		},
		{
			name: "explicit false and zero override true and non-zero",
			layers: []*Layer{
				layer("file", "a", "/enabled", "true", "/count", "5"),
				layer("drop-in", "b", "/enabled", "false", "/count", "0"),
			},
			want: map[string]string{"/enabled": "false", "/count": "0"},
		},
		{
			name: "tombstone removes key",
			layers: []*Layer{
				layer("file", "a", "/port", "1", "/name", `"x"`),
				layer("drop-in", "b", "/port", "null"),
			},
			want: map[string]string{"/name": `"x"`},
		},
		{
			name: "tombstone removes a whole object",
			layers: []*Layer{
				layer("file", "a", "/gates/A", "true", "/gates/B", "false", "/port", "1"),
				layer("drop-in", "b", "/gates", "null"),
			},
			want: map[string]string{"/port": "1"},
		},
		{
			name: "a later object replaces a scalar",
			layers: []*Layer{
				layer("file", "a", "/x", "5"),
				layer("drop-in", "b", "/x/y", "1"),
			},
			want: map[string]string{"/x/y": "1"},
		},
		{
			name: "a later scalar replaces an object, an even later member rebuilds it",
			layers: []*Layer{
				layer("file", "a", "/x/a", "1"),
				layer("drop-in", "b", "/x", "[1]"),
				layer("drop-in", "c", "/x/c", "3"),
			},
			want: map[string]string{"/x/c": "3"},
		},
		{
			name: "map members merge per key",
			layers: []*Layer{
				layer("file", "a", "/featureGates/A", "true", "/featureGates/B", "true"),
				layer("flag", "--feature-gates", "/featureGates/B", "false"),
			},
			want: map[string]string{"/featureGates/A": "true", "/featureGates/B": "false"},
		},
		{
			name: "arrays replace whole",
			layers: []*Layer{
				layer("file", "a", "/origins", `["a","b"]`),
				layer("drop-in", "b", "/origins", `["c"]`),
			},
			want: map[string]string{"/origins": `["c"]`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Merge(tc.layers...).Values()
			if !maps.Equal(got, tc.want) {
				t.Errorf("Merge() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMergeMatchesMergePatch checks the flat merge against a direct
// implementation of RFC 7386 applied document by document.
func TestMergeMatchesMergePatch(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{"a":{"b":1,"c":[1,2]},"d":"x","e":{"f":{"g":true}}}`,
		`{"a":{"b":null,"c":{"z":1}},"d":{"y":2},"h":0}`,
		`{"a":5,"e":{"f":{"g":false,"h":null}}}`,
		`{"a":{"q":"r"},"d":null,"e":{"f":"s"}}`,
	}
	var want any = map[string]any{}
	var layers []*Layer
	for i, d := range docs {
		var patch any
		if err := json.Unmarshal([]byte(d), &patch); err != nil {
			t.Fatal(err)
		}
		want = mergePatch(want, patch)
		vals, err := Flatten([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, &Layer{Source: Source{Origin: "doc", Name: fmt.Sprint(i)}, Values: vals})

		doc, err := Merge(layers...).Document()
		if err != nil {
			t.Fatal(err)
		}
		var got any
		if err := json.Unmarshal(doc, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(pruneEmpty(got), pruneEmpty(want)) {
			t.Errorf("after %d documents: got %s, want %v", i+1, doc, want)
		}
	}
}

func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// pruneEmpty removes empty objects, which the flat model does not keep.
func pruneEmpty(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, c := range m {
		c = pruneEmpty(c)
		if cm, ok := c.(map[string]any); ok && len(cm) == 0 {
			continue
		}
		out[k] = c
	}
	return out
}

func TestExplain(t *testing.T) {
	t.Parallel()
	r := Merge(
		layer("file", "/etc/c.yaml", "/port", "1", "/name", `"x"`),
		layer("drop-in", "/etc/c.d/10.yaml", "/port", "2"),
		layer("flag", "--port", "/port", "3"),
	)
	r.fill(Source{Origin: "default"}, map[string]string{"/qps": "50"})

	p, ok := r.Explain("/port")
	if !ok {
		t.Fatal("Explain(/port) not found")
	}
	want := Provenance{Key: "/port", Value: "3", Source: Source{Origin: "flag", Name: "--port"}, Shadowed: []Shadow{
		{Source: Source{Origin: "drop-in", Name: "/etc/c.d/10.yaml"}, Value: "2"},
		{Source: Source{Origin: "file", Name: "/etc/c.yaml"}, Value: "1"},
	}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Explain(/port) = %+v, want %+v", p, want)
	}
	if p, _ := r.Explain("/qps"); p.Source.Origin != "default" || p.Value != "50" {
		t.Errorf("Explain(/qps) = %+v, want the default 50", p)
	}
	if _, ok := r.Explain("/missing"); ok {
		t.Error("Explain(/missing) found a key no layer set")
	}
	if s, _ := r.SourceOf("/name"); s.String() != "file /etc/c.yaml" {
		t.Errorf("SourceOf(/name) = %v", s)
	}
}

func TestFillAfterTombstone(t *testing.T) {
	t.Parallel()
	r := Merge(layer("file", "a", "/port", "1"), layer("drop-in", "b", "/port", "null"))
	r.fill(Source{Origin: "default"}, map[string]string{"/port": "8443"})
	p, _ := r.Explain("/port")
	if p.Value != "8443" || p.Source.Origin != "default" || len(p.Shadowed) != 2 {
		t.Errorf("Explain(/port) = %+v, want the default shadowing the tombstone and the file", p)
	}
}

func TestManyLayers(t *testing.T) {
	t.Parallel()
	var ls []*Layer
	for i := range 150 {
		ls = append(ls, layer("drop-in", fmt.Sprint(i), "/k", fmt.Sprint(i)))
	}
	r := Merge(ls...)
	p, _ := r.Explain("/k")
	if p.Value != "149" || p.Source.Name != "149" || len(p.Shadowed) != 149 || p.Shadowed[0].Source.Name != "148" || p.Shadowed[148].Source.Name != "0" {
		t.Errorf("Explain over 150 layers: value %s from %s, %d shadowed", p.Value, p.Source, len(p.Shadowed))
	}
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	tenant := layer("namespace", "team-a/overrides",
		"/timeout", "30", "/maxTimeout", "100", "/featureGates/A", "true", "/featureGates", "null", "/labels/x", `"y"`)
	tenant.Policy = &Rules{
		Allow: []string{"/timeout", "/featureGates/*", "/maxTimeout", "/labels"},
		Deny:  map[string]string{"/maxTimeout": "cluster-only", "/featureGates/A": "locked by the operator"},
	}
	r := Merge(layer("configmap", "system/cluster", "/timeout", "10", "/featureGates/A", "false"), tenant)
	got := map[string]string{}
	for _, d := range r.Dropped() {
		got[d.Key] = d.Reason
	}
	want := map[string]string{
		"/maxTimeout":     "cluster-only",
		"/featureGates/A": "locked by the operator",
		"/featureGates":   "locked by the operator", // would replace the locked member
	}
	if !maps.Equal(got, want) {
		t.Errorf("dropped = %v, want %v", got, want)
	}
	for _, d := range r.Dropped() {
		if wantField := map[string]string{"/featureGates": "/featureGates/A"}[d.Key]; d.Field != wantField {
			t.Errorf("%s: field %q, want %q", d, d.Field, wantField)
		}
	}
	if v, _ := r.Lookup("/featureGates/A"); v != "false" {
		t.Errorf("locked key changed to %s", v)
	}
	if v, _ := r.Lookup("/timeout"); v != "30" {
		t.Errorf("allowed key /timeout = %s, want 30", v)
	}
	for _, d := range r.Dropped() {
		if !strings.Contains(d.String(), "namespace team-a/overrides") {
			t.Errorf("dropped key report %q does not name the layer", d)
		}
	}
}

func TestCovers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, key string
		want         bool
	}{
		{"/a", "/a", true},
		{"/a", "/a/b", true},
		{"/a", "/ab", false},
		{"/a/*", "/a/b", true},
		{"/a/*", "/a", false},
		{"/a/*/c", "/a/x/c", true},
		{"/a/*/c", "/a/x/d", false},
		{"/a/*/c", "/a/x/c/d", true},
	}
	for _, tc := range tests {
		if got := Covers(tc.pattern, tc.key); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

func TestUnder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"/a/b", "/a", true},
		{"/a/*", "/a", true},
		{"/a/*/c", "/a", true},
		{"/*/c", "/a", true},
		{"/a", "/a", false},
		{"/a", "/a/b", false},
		{"/ab/c", "/a", false},
		{"/a/b", "/b", false},
		{"/a/*/c", "/a/x", true},
		{"/a/*/c", "/a/x/c", false},
	} {
		if got := Under(tc.pattern, tc.key); got != tc.want {
			t.Errorf("Under(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

func TestFlattenUnflatten(t *testing.T) {
	t.Parallel()
	doc := `{"a":{"b":1,"c/d":{"e~f":"x"}},"list":[1,{"x":2}],"n":12345678901234567890,"s":"<&>","z":null,"empty":{}}`
	vals, err := Flatten([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"/a/b":         "1",
		"/a/c~1d/e~0f": `"x"`,
		"/list":        `[1,{"x":2}]`,
		"/n":           "12345678901234567890",
		"/s":           `"<&>"`,
		"/z":           "null",
	}
	if !maps.Equal(vals, want) {
		t.Errorf("Flatten = %v, want %v", vals, want)
	}
	out, err := Unflatten(vals)
	if err != nil {
		t.Fatal(err)
	}
	back, _ := Flatten(out)
	delete(want, "/z") // tombstones are left out
	if !maps.Equal(back, want) {
		t.Errorf("Flatten(Unflatten) = %v, want %v", back, want)
	}
	for _, bad := range []string{`[1]`, `"x"`, `null`, `{`} {
		if _, err := Flatten([]byte(bad)); err == nil {
			t.Errorf("Flatten(%s) succeeded, want an error", bad)
		}
	}
	if _, err := Unflatten(map[string]string{"/a": "1", "/a/b": "2"}); err == nil {
		t.Error("Unflatten of a leaf with a member succeeded")
	}
}

func TestPointer(t *testing.T) {
	t.Parallel()
	p := Pointer("labels", "app.kubernetes.io/name", "a~b")
	if p != "/labels/app.kubernetes.io~1name/a~0b" {
		t.Errorf("Pointer = %q", p)
	}
	segs, ok := Segments(p)
	if !ok || !reflect.DeepEqual(segs, []string{"labels", "app.kubernetes.io/name", "a~b"}) {
		t.Errorf("Segments(%q) = %q, %v", p, segs, ok)
	}
	for _, bad := range []string{"a", "/a~2", "/a~"} {
		if _, ok := Segments(bad); ok {
			t.Errorf("Segments(%q) accepted a bad pointer", bad)
		}
	}
}

func FuzzFlattenUnflatten(f *testing.F) {
	for _, s := range []string{`{"a":{"b":1}}`, `{"a~1":null}`, `{}`, `{"":{"":1}}`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vals, err := Flatten(data)
		if err != nil {
			return
		}
		doc, err := Unflatten(vals)
		if err != nil {
			t.Fatalf("Unflatten(Flatten(%q)): %v", data, err)
		}
		again, err := Flatten(doc)
		if err != nil {
			t.Fatalf("Flatten of Unflatten output %q: %v", doc, err)
		}
		for k, v := range vals {
			if v == Tombstone {
				continue
			}
			if again[k] != v && !jsonEqual(again[k], v) {
				t.Fatalf("key %q: %q became %q", k, v, again[k])
			}
		}
	})
}

func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// TestExtendMatchesMerge checks that extending the merge of the first
// layers by the rest gives what merging them all at once gives, at every
// split, with tombstones, nesting and a policy, and that the Result
// extended is left as it was.
func TestExtendMatchesMerge(t *testing.T) {
	t.Parallel()
	t.Run("nested", func(t *testing.T) {
		testExtendMatchesMerge(t, []string{
			`{"a":{"b":1,"c":[1,2]},"d":"x","e":{"f":{"g":true}},"p":1}`,
			`{"a":{"b":null,"c":{"z":1}},"d":{"y":2},"h":0,"p":2}`,
			`{"a":5,"e":{"f":{"g":false,"h":null}},"locked":1}`,
			`{"a":{"q":"r"},"d":null,"e":{"f":"s"},"p":3}`,
			`{"e":{"f":{"g":true}},"locked":{"x":1},"h":null}`,
		})
	})
	t.Run("flat", func(t *testing.T) {
		testExtendMatchesMerge(t, []string{
			`{"a":1,"b":[1,2],"d":"x","p":1}`,
			`{"a":null,"b":"z","h":0,"p":2}`,
			`{"a":5,"locked":1,"q":false}`,
			`{"d":null,"e":"s","p":3,"q":null}`,
			`{"locked":[1],"h":null,"a":7}`,
		})
	})
}

func testExtendMatchesMerge(t *testing.T, docs []string) {
	deny := &Rules{Deny: map[string]string{"/locked": "locked"}}
	var layers []*Layer
	for i, d := range docs {
		vals, err := Flatten([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		l := &Layer{Source: Source{Origin: "doc", Name: fmt.Sprint(i)}, Values: vals}
		if i >= 2 {
			l.Policy = deny
		}
		layers = append(layers, l)
	}
	describe := func(r *Result) string {
		var b strings.Builder
		for _, k := range r.Keys() {
			p, _ := r.Explain(k)
			fmt.Fprintf(&b, "%s=%s from %v shadowing %v\n", k, p.Value, p.Source, p.Shadowed)
		}
		fmt.Fprintf(&b, "dropped %v\ncleared %v\n", r.Dropped(), r.Cleared())
		return b.String()
	}
	want := describe(Merge(layers...))
	for split := 0; split <= len(layers); split++ {
		base := Merge(layers[:split]...)
		before := describe(base)
		if got := describe(base.extend(layers[split:]...)); got != want {
			t.Errorf("split at %d:\n got %s\nwant %s", split, got, want)
		}
		if after := describe(base); after != before {
			t.Errorf("split at %d: Extend changed the base:\n%s\nwas\n%s", split, after, before)
		}
	}
}

func TestFillFunc(t *testing.T) {
	t.Parallel()
	r := Merge(&Layer{Source: Source{Origin: "file"}, Values: map[string]string{"/a": "1"}})
	calls := 0
	r.fillFunc(Source{Origin: "default"}, func(a, b any, values map[string]string) map[string]string {
		calls++
		if values["/a"] != "1" || a != "a" || b != 2 {
			t.Errorf("fill saw %v", values)
		}
		return map[string]string{"/b": "2"}
	}, "a", 2)
	if calls != 0 {
		t.Fatal("the fill ran before anything was read")
	}
	if src, _ := r.SourceOf("/b"); src.Origin != "default" || r.size() != 2 || calls != 1 {
		t.Errorf("source %v, len %d, calls %d", src, r.size(), calls)
	}
	defer func() {
		if recover() == nil {
			t.Error("extend of a filled Result did not panic")
		}
	}()
	r.extend()
}

// TestTombstoneLeavesATrace removes a map a lower layer set with a null:
// the removed key is listed, and its provenance names what it erased.
func TestTombstoneLeavesATrace(t *testing.T) {
	cluster := &Layer{Source: Source{Origin: "cluster", Name: "ops/config"}, Values: map[string]string{"/m/a": "1", "/m/b": "2", "/x": "3"}}
	tenant := &Layer{Source: Source{Origin: "namespace", Name: "team/overrides"}, Values: map[string]string{"/m": Tombstone}}
	r := Merge(cluster, tenant)
	if got := r.Tombstones(); len(got) != 1 || got[0] != "/m" {
		t.Fatalf("Tombstones() = %v", got)
	}
	p, ok := r.Explain("/m")
	if !ok || p.Value != Tombstone || p.Source != tenant.Source || len(p.Replaced) != 2 ||
		p.Replaced[0].Key != "/m/a" || p.Replaced[0].Source != cluster.Source || p.Replaced[1].Key != "/m/b" {
		t.Fatalf("Explain(/m) = %+v, %t", p, ok)
	}
	if p, _ := r.Explain("/x"); len(p.Replaced) != 0 {
		t.Errorf("Explain(/x) = %+v", p)
	}
	// A layer above sets a member of the map again: the null is replaced
	// in turn, and what it erased is reported by the key in its place.
	flag := &Layer{Source: Source{Origin: "flag", Name: "--m"}, Values: map[string]string{"/m/c": "4"}}
	r = Merge(cluster, tenant, flag)
	p, _ = r.Explain("/m/c")
	var replaced []string
	for _, c := range p.Replaced {
		replaced = append(replaced, c.Key+" from "+c.Source.String()+" by "+c.BySource.String())
	}
	if got, want := strings.Join(replaced, "; "), "/m from namespace team/overrides by flag --m; /m/a from cluster ops/config by namespace team/overrides; /m/b from cluster ops/config by namespace team/overrides"; got != want {
		t.Errorf("Explain(/m/c) replaced %q, want %q", got, want)
	}
}
