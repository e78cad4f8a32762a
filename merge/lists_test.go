package merge

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestKeyedLists merges Greenhouse-shaped option values, a list keyed by
// name, across three layers: per element, each with its own provenance,
// a tombstone removing one element, a reference in a higher layer
// replacing a literal below whole, and back.
func TestKeyedLists(t *testing.T) {
	t.Parallel()
	lists := Lists{"/spec/optionValues": "name"}
	layer := func(name, doc string) *Layer {
		t.Helper()
		v, err := lists.Flatten([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return &Layer{Source: Source{Origin: name}, Values: v}
	}
	defaults := layer("defaults", `{"spec":{"optionValues":[{"name":"replicas","value":1},{"name":"password","value":"changeme"},{"name":"debug","value":false}]}}`)
	preset := layer("preset", `{"spec":{"optionValues":[{"name":"replicas","value":3},{"name":"password","valueFrom":{"secret":{"name":"db","key":"pw"}}}]}}`)
	override := layer("override", `{"spec":{"optionValues":[{"name":"password","value":"literal-again"}]}}`)
	override.Values["/spec/optionValues/debug"] = Tombstone

	r := Merge(defaults, preset, override)
	doc, err := lists.Unflatten(r.Values())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"optionValues":[{"name":"password","value":"literal-again"},{"name":"replicas","value":3}]}}`
	if string(doc) != want {
		t.Errorf("merged\n%s\nwant\n%s", doc, want)
	}
	p, _ := r.Explain("/spec/optionValues/password")
	if p.Source.Origin != "override" || len(p.Shadowed) != 2 || p.Shadowed[0].Source.Origin != "preset" || p.Shadowed[1].Source.Origin != "defaults" {
		t.Errorf("provenance of password: %+v", p)
	}
	if src, _ := r.SourceOf("/spec/optionValues/replicas"); src.Origin != "preset" {
		t.Errorf("replicas from %s", src)
	}
	// Without the override the reference wins whole: no value is left
	// beside it, as Greenhouse's merge of .value alone loses it.
	doc, _ = lists.Unflatten(Merge(defaults, preset).Values())
	if !strings.Contains(string(doc), `{"name":"password","valueFrom":{"secret":{"key":"pw","name":"db"}}}`) {
		t.Errorf("the reference did not win whole: %s", doc)
	}
}

func TestKeyedListErrors(t *testing.T) {
	t.Parallel()
	lists := Lists{"/items": "name", "/*/ports": "port"}
	for _, tc := range []struct{ doc, want string }{
		{`{"items":[{"name":"a"},{"name":"b"},{"name":"a","x":1}]}`, `/items: elements [0] and [2] both have name "a": a keyed list holds one element per name`},
		{`{"items":[{"value":1}]}`, `/items[0]: the element has no "name"`},
		{`{"items":[1]}`, `/items[0]: an element of a keyed list must be an object with "name"`},
		{`{"svc":{"ports":[{"port":80},{"port":80}]}}`, `/svc/ports: elements [0] and [1] both have port "80"`},
		{`{"a":1,"b":{"c":1,"c":2}}`, `/b: member "c" is given twice`},
		{`{"a":1,"a":2}`, `document: member "a" is given twice`},
		{`{"l":[{"x":1},{"y":1,"y":2}]}`, `/l/1: member "y" is given twice`},
		{`{"k\u0061":1,"ka":2}`, `document: member "ka" is given twice`},
	} {
		if _, err := lists.Flatten([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
	// Numbers as keys, and back.
	v, err := lists.Flatten([]byte(`{"svc":{"ports":[{"port":443,"tls":true},{"port":80}]}}`))
	if err != nil || v["/svc/ports/443"] != `{"port":443,"tls":true}` {
		t.Fatalf("numeric keys: %v, %v", v, err)
	}
	doc, err := lists.Unflatten(v)
	if err != nil || string(doc) != `{"svc":{"ports":[{"port":443,"tls":true},{"port":80}]}}` {
		t.Errorf("back: %s, %v", doc, err)
	}
	// An element set by hand without its key gets it from its pointer.
	doc, err = lists.Unflatten(map[string]string{"/items/b": `{"v":2}`, "/items/a": `{"name":"a","v":1}`})
	if err != nil || string(doc) != `{"items":[{"name":"a","v":1},{"name":"b","v":2}]}` {
		t.Errorf("keys from pointers: %s, %v", doc, err)
	}
	if _, err := lists.Unflatten(map[string]string{"/items/a": `{"name":"b"}`}); err == nil {
		t.Error("an element whose key disagrees with its pointer was accepted")
	}
}

// TestRefs holds references where their layer's producer wrote them,
// shows them by name, and resolves them only through the caller's reader,
// only in the namespaces it names, naming the reference on error; the
// same text from any other layer is a literal.
func TestRefs(t *testing.T) {
	t.Parallel()
	ref := Ref{Kind: "secret", Namespace: "team-a", Name: "db", Key: "password"}
	if ref.String() != "secret team-a/db#password" {
		t.Errorf("String: %s", ref)
	}
	for _, bad := range []string{"secret a/b", "secret /b#c", "a/b#c"} {
		if _, ok := parseRef(bad); ok {
			t.Errorf("parseRef(%q) accepted it", bad)
		}
	}
	// A literal above a reference wins, and the other way round.
	lo := &Layer{Source: Source{Origin: "lo"}, Values: map[string]string{"/db/password": `"plain"`}}
	hi := &Layer{Source: Source{Origin: "hi"}, Values: map[string]string{"/db/password": ref.JSON()}, Refs: map[string]bool{"/db/password": true}}
	if r := Merge(lo, hi); !refIs(r, "/db/password", ref) {
		t.Errorf("reference above: %v", r.Values())
	}
	if r := Merge(hi, lo); refIs(r, "/db/password", ref) || r.Values()["/db/password"] != `"plain"` {
		t.Errorf("literal above: %v", r.Values())
	}
	for _, notRef := range []string{`{"$ref":1}`, `{"$ref":"secret a/b#c","x":1}`, `"secret a/b#c"`} {
		l := &Layer{Values: map[string]string{"/x": notRef}, Refs: map[string]bool{"/x": true}}
		if got, ok := Merge(l).RefOf("/x", notRef); ok {
			t.Errorf("%s read as a reference: %v", notRef, got)
		}
	}

	// A tenant's literal of a reference's shape is a literal: RefOf
	// says so, and ResolveRefs reads nothing for it.
	forged := Ref{Kind: "secret", Namespace: "kube-system", Name: "admin-token", Key: "token"}
	tenant := &Layer{Source: Source{Origin: "namespace", Name: "team-a/overrides"}, Values: map[string]string{"/db/password": forged.JSON()}}
	if LooksLikeRef(`{"a":[{"b":`+forged.JSON()+`}]}`) != true || LooksLikeRef(`{"$ref":1}`) || LooksLikeRef(`"$ref"`) {
		t.Error("LooksLikeRef")
	}
	// A string that holds one as JSON text, as a string field or a
	// Parsed kind's ConfigMap value does, at any depth.
	inString, _ := json.Marshal(forged.JSON())
	inInner, _ := json.Marshal(`{"a":` + string(inString) + `}`)
	if !LooksLikeRef(string(inString)) || !LooksLikeRef(`{"b":[`+string(inInner)+`]}`) || LooksLikeRef(`"{\"$ref\":1}"`) {
		t.Errorf("LooksLikeRef of %s or %s", inString, inInner)
	}
	r := Merge(lo, tenant)
	if _, ok := r.RefOf("/db/password", forged.JSON()); ok {
		t.Error("a tenant's literal read as a reference")
	}
	reads := 0
	read := func(_ context.Context, r Ref) ([]byte, error) {
		reads++
		if r == ref {
			return []byte("s3cret"), nil
		}
		return nil, errors.New("not found")
	}
	got, err := r.ResolveRefs(context.Background(), []string{"team-a", "kube-system"}, read)
	if err != nil || reads != 0 || got["/db/password"] != forged.JSON() {
		t.Errorf("ResolveRefs of a tenant's literal: %v, %v, %d reads", got, err, reads)
	}

	producer := &Layer{Source: Source{Origin: "PluginOverride"}, Values: map[string]string{
		"/db/password": ref.JSON(), "/list/x": `{"name":"x","value":` + ref.JSON() + `}`, "/plain": `1`,
	}, Refs: map[string]bool{"/db/password": true, "/list/x": true}}
	got, err = Merge(producer).ResolveRefs(context.Background(), []string{"team-a"}, read)
	if err != nil || got["/db/password"] != `"s3cret"` || got["/list/x"] != `{"name":"x","value":"s3cret"}` || got["/plain"] != "1" {
		t.Errorf("ResolveRefs: %v, %v", got, err)
	}
	if v := producer.Values["/list/x"]; v != `{"name":"x","value":`+ref.JSON()+`}` {
		t.Error("ResolveRefs changed its input")
	}
	reads = 0
	if _, err := Merge(producer).ResolveRefs(context.Background(), []string{"team-b"}, read); !errors.Is(err, ErrRefNamespace) || reads != 0 ||
		!strings.Contains(err.Error(), "secret team-a/db#password") || !strings.Contains(err.Error(), "only team-b may be read here") {
		t.Errorf("a reference to a namespace not given: %v, %d reads", err, reads)
	}
	missing := Ref{Kind: "secret", Namespace: "team-a", Name: "gone", Key: "k"}
	l := &Layer{Values: map[string]string{"/x": missing.JSON()}, Refs: map[string]bool{"/x": true}}
	if _, err := Merge(l).ResolveRefs(context.Background(), []string{"team-a"}, read); err == nil || err.Error() != "/x: reading secret team-a/gone#k: not found" {
		t.Errorf("a reference that cannot be read: %v", err)
	}
}

// refIs reports whether key's effective value in r is the reference ref.
func refIs(r *Result, key string, ref Ref) bool {
	v, _ := r.Lookup(key)
	got, ok := r.RefOf(key, v)
	return ok && got == ref
}

// FuzzKeyedLists checks that flattening with keyed lists and back keeps
// every element and never accepts a duplicate member.
func FuzzKeyedLists(f *testing.F) {
	for _, s := range []string{`{"l":[{"k":"a","v":1},{"k":"b"}]}`, `{"l":[{"k":1},{"k":"1"}]}`, `{"a":{"l":[]}}`, `{"x":1,"x":2}`} {
		f.Add([]byte(s))
	}
	lists := Lists{"/l": "k", "/*/l": "k"}
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, lists, data) })
}

// TestSetAndAppendLists: a set holds each element once, from the highest
// layer that gives it, less what a layer removes; an appended list holds
// every layer's elements, lower layers' first, each credited to its
// layer; both unflatten as arrays, and a document's removals are
// tombstones.
func TestSetAndAppendLists(t *testing.T) {
	lists := Lists{"/tags": ListSet, "/*/hooks": ListAppend}
	flat := func(doc string) map[string]string {
		t.Helper()
		v, err := lists.Flatten([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		return v
	}
	layer := func(name, doc string) *Layer {
		return &Layer{Source: Source{Origin: "file", Name: name}, Values: flat(doc), Lists: lists}
	}
	r := Merge(
		layer("a", `{"tags":["x","y",1],"s":{"hooks":[{"run":"a"},"b"]}}`),
		layer("b", `{"tags":["z","x"],"$deleteFromPrimitiveList/tags":["y"],"s":{"hooks":["c"]}}`),
		layer("c", `{"s":{"hooks":["b"]}}`),
	)
	doc, err := r.Document()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"s":{"hooks":[{"run":"a"},"b","c","b"]},"tags":[1,"x","z"]}`; string(doc) != want {
		t.Errorf("document %s, want %s", doc, want)
	}
	for key, want := range map[string]string{"/tags/x": "b", "/tags/1": "a", "/tags/z": "b", "/s/hooks/0000.000001": "a", "/s/hooks/0001.000000": "b", "/s/hooks/0002.000000": "c"} {
		if src, ok := r.SourceOf(key); !ok || src.Name != want {
			t.Errorf("%s from %v, want %s", key, src, want)
		}
	}
	if p, ok := r.Explain("/tags/x"); !ok || len(p.Shadowed) != 1 || p.Shadowed[0].Source.Name != "a" {
		t.Errorf("/tags/x %+v", p)
	}
	if got := r.Tombstones(); len(got) != 1 || got[0] != "/tags/y" {
		t.Errorf("removed %v", got)
	}

	for doc, want := range map[string]string{
		`{"tags":["x","x"]}`:                                   `/tags: elements [0] and [1] are both "x": a set holds each element once`,
		`{"tags":[{"a":1}]}`:                                   `/tags[0]: an element of a set must be a string, a number or a boolean`,
		`{"tags":[null]}`:                                      `/tags[0]: an element of a set must be`,
		`{"tags":"x"}`:                                         `/tags: a set must be an array`,
		`{"s":{"hooks":{"a":1}}}`:                              `/s/hooks: an appended list must be an array`,
		`{"$deleteFromPrimitiveList/s":["x"],"s":{}}`:          `names no set`,
		`{"$deleteFromPrimitiveList/tags":[["x"]]}`:            `an element of a set must be`,
		`{"a":{"$deleteFromPrimitiveList/tags":["x"]}}`:        `names no set`,
		`{"tags":["y"],"$deleteFromPrimitiveList/tags":["y"]}`: `both gives and removes /tags/y`,
	} {
		if _, err := lists.Flatten([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}

	if _, _, err := lists.Removals([]byte(`{"tags":["y"],"$deleteFromPrimitiveList/tags":["y"]}`)); err == nil || !strings.Contains(err.Error(), "both gives and removes /tags/y") {
		t.Errorf("Removals of what the document gives: %v", err)
	}
	stripped, removed, err := lists.Removals([]byte(`{"tags":["x"],"$deleteFromPrimitiveList/tags":["y",2]}`))
	if err != nil || string(stripped) != `{"tags":["x"]}` || strings.Join(slices.Sorted(slices.Values(removed)), ",") != "/tags/2,/tags/y" {
		t.Errorf("Removals: %s %v %v", stripped, removed, err)
	}
}

// FuzzSetAndAppendLists: flattening with sets and appended lists and back
// keeps every element, and a set never holds one twice.
func FuzzSetAndAppendLists(f *testing.F) {
	for _, s := range []string{`{"s":["a","b",1,true]}`, `{"a":[{"x":1},[2],"c"]}`, `{"s":["a"],"$deleteFromPrimitiveList/s":["b"]}`, `{"s":["a","a"]}`} {
		f.Add([]byte(s))
	}
	lists := Lists{"/s": ListSet, "/a": ListAppend}
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, lists, data) })
}

// TestAppendedElementOrder: appended elements sort by layer, then place,
// as numbers, past the widths their segments are written in.
func TestAppendedElementOrder(t *testing.T) {
	segs := []string{"10000.000000", "9999.000001", "0000.1000000", "0000.100001", "9999.000000", "000002"}
	sortElements(segs, ListAppend)
	if want := []string{"000002", "0000.100001", "0000.1000000", "9999.000000", "9999.000001", "10000.000000"}; !slices.Equal(segs, want) {
		t.Errorf("%v, want %v", segs, want)
	}
}

// roundTrip checks that what lists flatten data to unflattens and
// flattens again to the same values.
func roundTrip(t *testing.T, lists Lists, data []byte) {
	vals, err := lists.Flatten(data)
	if err != nil {
		return
	}
	doc, err := lists.Unflatten(vals)
	if err != nil {
		t.Fatalf("Unflatten(Flatten(%q)): %v", data, err)
	}
	again, err := lists.Flatten(doc)
	if err != nil {
		t.Fatalf("Flatten of %q: %v", doc, err)
	}
	for k, v := range vals {
		if v != Tombstone && again[k] != v && !jsonEqual(again[k], v) {
			t.Fatalf("key %q: %q became %q", k, v, again[k])
		}
	}
}
