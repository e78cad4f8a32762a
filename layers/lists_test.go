package layers_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cliflag "k8s.io/component-base/cli/flag"

	upstreamskind "github.com/stratacfg/strata/internal/testkind/upstreams"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

type upstreams = upstreamskind.Upstreams

func upstreamsComponent(t *testing.T) *layers.Component[*upstreams] {
	t.Helper()
	cfg := upstreamskind.Config()
	cfg.Validate = func(hub runtime.Object) field.ErrorList {
		var errs field.ErrorList
		for i, u := range hub.(*upstreams).Upstreams {
			if u.URL != "" && !strings.HasPrefix(u.URL, "http://") {
				errs = append(errs, field.Invalid(field.NewPath("upstreams").Index(i).Child("url"), u.URL, "must be an http:// URL"))
			}
		}
		for i, tag := range hub.(*upstreams).Tags {
			if tag == "bad" {
				errs = append(errs, field.Invalid(field.NewPath("tags").Index(i), tag, "not a tag"))
			}
		}
		for i, h := range hub.(*upstreams).Hooks {
			if h == "bad" {
				errs = append(errs, field.Invalid(field.NewPath("hooks").Index(i), h, "not a hook"))
			}
		}
		return errs
	}
	kind, err := scheme.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &layers.Component[*upstreams]{Name: "lists", Kind: kind, Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		fss.FlagSet("upstreams").String("upstreams", "", "upstreams, as a YAML or JSON list, merged by name into the file's")
		b.Bind("upstreams", "/upstreams", nil)
		return nil
	}}
}

// TestKeyedListField merges a Go kind's keyed list across the file, a
// drop-in and a flag: per element, each element credited to its layer; a
// null element removes one; two elements of one name in a file are refused
// with both positions named.
func TestKeyedListField(t *testing.T) {
	dir := t.TempDir()
	head := "apiVersion: lists.test.strata.dev/v1\nkind: Upstreams\n"
	watchtest.WriteFiles(t, dir, map[string]string{
		"c.yaml":         head + "retries: 2\nupstreams:\n- {name: a, url: http://a, weight: 1}\n- {name: b, url: http://b}\n- {name: c, url: http://c}\n",
		"conf.d/10.yaml": head + "upstreams:\n- {name: b, url: http://b2, weight: 5}\n",
		"dup.yaml":       head + "upstreams:\n- {name: a}\n- {name: b}\n- {name: a, weight: 2}\n",
	})
	c := upstreamsComponent(t)
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d"),
		"--upstreams", `[{"name":"d","url":"http://d"}]`})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(loaded.Object.Upstreams)
	want := `[{"name":"a","url":"http://a","weight":1},{"name":"b","url":"http://b2","weight":5},{"name":"c","url":"http://c"},{"name":"d","url":"http://d"}]`
	if string(got) != want {
		t.Errorf("upstreams\n%s\nwant\n%s", got, want)
	}
	for key, want := range map[string]string{
		"/upstreams/a": "file " + filepath.Join(dir, "c.yaml"),
		"/upstreams/b": "drop-in " + filepath.Join(dir, "conf.d/10.yaml"),
		"/upstreams/d": "flag --upstreams",
	} {
		if src, _ := loaded.Provenance.SourceOf(key); src.String() != want {
			t.Errorf("%s from %s, want %s", key, src, want)
		}
	}
	// A drop-in removes one element, as a strategic merge patch does.
	watchtest.WriteFiles(t, dir, map[string]string{"conf.d/20.yaml": head + "upstreams:\n- {name: c, $patch: delete}\n"})
	loaded, _, err = c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(loaded.Object.Upstreams); string(got) != `[{"name":"a","url":"http://a","weight":1},{"name":"b","url":"http://b2","weight":5}]` {
		t.Errorf("after removing c: %s", got)
	}
	if p, _ := loaded.Provenance.Explain("/upstreams/c"); p.Value != merge.Tombstone || p.Source.Name != filepath.Join(dir, "conf.d/20.yaml") {
		t.Errorf("the removal of c is not in provenance: %+v", p)
	}
	if _, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "dup.yaml")}); err == nil ||
		!strings.Contains(err.Error(), "dup.yaml") || !strings.Contains(err.Error(), `/upstreams: elements [0] and [2] both have name "a"`) {
		t.Errorf("a duplicate element: %v", err)
	}
}

// TestKeyedListErrorsNameTheElement: an invalid element is named by its
// key and the file that gave it, not by its index in the merged list,
// which no file wrote.
func TestKeyedListErrorsNameTheElement(t *testing.T) {
	dir := t.TempDir()
	head := "apiVersion: lists.test.strata.dev/v1\nkind: Upstreams\n"
	watchtest.WriteFiles(t, dir, map[string]string{
		"c.yaml":         head + "upstreams:\n- {name: a, url: http://a}\n- {name: b, url: http://b}\n- {name: c, url: http://c}\n",
		"conf.d/50.yaml": head + "upstreams:\n- {name: b, url: http://b2}\n- {name: zzz, url: ftp://bad}\n",
	})
	_, _, err := upstreamsComponent(t).Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")})
	want := "drop-in " + filepath.Join(dir, "conf.d/50.yaml") + `: upstreams[name=zzz].url: Invalid value: "ftp://bad": must be an http:// URL`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}

	// A set's element is named by its value, an appended element by its
	// place in the list; each with the file that gave it.
	watchtest.WriteFiles(t, dir, map[string]string{
		"c.yaml":         head + "tags: [a, z]\nhooks: [h1, h2]\n",
		"conf.d/50.yaml": head + "tags: [bad]\nhooks: [bad]\n",
	})
	_, _, err = upstreamsComponent(t).Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")})
	for _, want := range []string{
		"drop-in " + filepath.Join(dir, "conf.d/50.yaml") + `: tags["bad"]: Invalid value: "bad": not a tag`,
		"drop-in " + filepath.Join(dir, "conf.d/50.yaml") + `: hooks[2]: Invalid value: "bad": not a hook`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %s", err, want)
		}
	}
}

// TestMigrateRefusesARemoval migrates a file that removes a list element:
// the removal cannot be written alone, so the migration is refused with
// the key named, and a file without one migrates.
func TestMigrateRefusesARemoval(t *testing.T) {
	dir := t.TempDir()
	head := "apiVersion: lists.test.strata.dev/v1\nkind: Upstreams\n"
	watchtest.WriteFiles(t, dir, map[string]string{
		"rm.yaml": head + "upstreams:\n- {name: a, url: http://a}\n- {name: c, $patch: delete}\n",
		"ok.yaml": head + "upstreams:\n- {name: a, url: http://a}\n",
	})
	run := func(file string) (int, string, string) {
		var stdout, stderr strings.Builder
		code := upstreamsComponent(t).Execute(context.Background(), []string{"--config", filepath.Join(dir, file), "--migrate-config"}, &stdout, &stderr,
			func(context.Context, *layers.CommandLine, *layers.Loaded[*upstreams]) error { return nil })
		return code, stdout.String(), stderr.String()
	}
	if code, out, errOut := run("rm.yaml"); code != 1 || out != "" || !strings.Contains(errOut, "removes a list element") || !strings.Contains(errOut, "/upstreams/") {
		t.Errorf("a removal: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run("ok.yaml"); code != 0 || !strings.Contains(out, "name: a") {
		t.Errorf("no removal: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestListStrategies merges a set and an appended list across the file
// and two drop-ins: the set holds each element once, from the highest
// layer that gives it, less what a drop-in removes; the appended list
// holds every layer's elements, lower layers' first, each credited to its
// layer.
func TestListStrategies(t *testing.T) {
	dir := t.TempDir()
	head := "apiVersion: lists.test.strata.dev/v1\nkind: Upstreams\n"
	watchtest.WriteFiles(t, dir, map[string]string{
		"c.yaml":         head + "tags: [b, a]\nhooks: [f1]\n",
		"conf.d/10.yaml": head + "tags: [c, a]\nhooks: [d1, d2, d1]\n",
		"conf.d/20.yaml": head + "$deleteFromPrimitiveList/tags: [b]\n",
	})
	c := upstreamsComponent(t)
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(loaded.Object.Tags, ","); got != "a,c" {
		t.Errorf("tags %s, want a,c", got)
	}
	if got := strings.Join(loaded.Object.Hooks, ","); got != "f1,d1,d2,d1" {
		t.Errorf("hooks %s, want f1,d1,d2,d1", got)
	}
	file, dropIn := "file "+filepath.Join(dir, "c.yaml"), "drop-in "+filepath.Join(dir, "conf.d/10.yaml")
	for key, want := range map[string]string{"/tags/a": dropIn, "/tags/c": dropIn} {
		if src, _ := loaded.Provenance.SourceOf(key); src.String() != want {
			t.Errorf("%s from %s, want %s", key, src, want)
		}
	}
	if p, ok := loaded.Provenance.Explain("/tags/b"); !ok || p.Value != merge.Tombstone || p.Source.String() != "drop-in "+filepath.Join(dir, "conf.d/20.yaml") {
		t.Errorf("the removed element: %+v", p)
	}
	var hooks []string
	for _, k := range loaded.Provenance.Keys() {
		if strings.HasPrefix(k, "/hooks/") {
			src, _ := loaded.Provenance.SourceOf(k)
			v, _ := loaded.Provenance.Lookup(k)
			hooks = append(hooks, v+" "+src.String())
		}
	}
	if want := []string{`"f1" ` + file, `"d1" ` + dropIn, `"d2" ` + dropIn, `"d1" ` + dropIn}; strings.Join(hooks, "\n") != strings.Join(want, "\n") {
		t.Errorf("the appended elements and their layers:\n%s\nwant\n%s", strings.Join(hooks, "\n"), strings.Join(want, "\n"))
	}

	// --explain says how each element's list merges.
	prov := layers.Provenances(loaded.Provenance)
	if prov["/tags/a"].List != "set" || prov["/upstreams/x"].List != "" {
		t.Errorf("explained: /tags/a %+v", prov["/tags/a"])
	}
	for k, p := range prov {
		if strings.HasPrefix(k, "/hooks/") && p.List != "append" {
			t.Errorf("explained: %s %+v", k, p)
		}
	}

	// A set's element given twice in one file is refused, naming both.
	watchtest.WriteFiles(t, dir, map[string]string{"dup.yaml": head + "tags: [a, b, a]\n"})
	if _, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "dup.yaml")}); err == nil || !strings.Contains(err.Error(), `elements [0] and [2] are both "a": a set holds each element once`) {
		t.Errorf("an element twice: %v", err)
	}
}

// unowned is a configuration kind whose type a component author does not
// own: no strata tags, its set declared by scheme.Version.Lists.
type unowned struct {
	metav1.TypeMeta `json:",inline"`
	Allowlist       []string `json:"allowlist,omitempty"`
}

func (in *unowned) DeepCopyObject() runtime.Object {
	out := *in
	out.Allowlist = slices.Clone(in.Allowlist)
	return &out
}

// TestDeclaredLists merges a field of a type the author does not own as
// the set its version declares; a declaration of what is no slice, or a
// set of what are not scalars, is refused.
func TestDeclaredLists(t *testing.T) {
	gv := k8sschema.GroupVersion{Group: "unowned.test.strata.dev", Version: "v1"}
	config := func(lists merge.Lists) scheme.Config {
		return scheme.Config{Group: gv.Group, Kind: "Unowned", Hub: "v1", Versions: []scheme.Version{{Version: "v1", Lists: lists,
			AddToScheme: func(s *runtime.Scheme) error { s.AddKnownTypeWithName(gv.WithKind("Unowned"), &unowned{}); return nil }}}}
	}
	kind, err := scheme.New(config(merge.Lists{"/allowlist": merge.ListSet}))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	head := "apiVersion: unowned.test.strata.dev/v1\nkind: Unowned\n"
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": head + "allowlist: [a, b]\n", "conf.d/10.yaml": head + "allowlist: [c]\n"})
	c := &layers.Component[*unowned]{Name: "unowned", Kind: kind}
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(loaded.Object.Allowlist, ","); got != "a,b,c" {
		t.Errorf("allowlist %s, want the union a,b,c", got)
	}
	for lists, want := range map[string]merge.Lists{
		"/kind is no slice field":               {"/kind": merge.ListSet},
		"/nope is no slice field":               {"/nope": merge.ListAppend},
		"/allowlist is declared append and set": {"/allowlist": merge.ListAppend},
	} {
		if _, err := scheme.New(config(want)); err == nil || !strings.Contains(err.Error(), lists) {
			t.Errorf("%v: %v, want %q", want, err, lists)
		}
	}
}

// TestRemovalKeepsStrictness: a file that removes a keyed list element
// ($patch: delete) is refused in strict mode for a field given twice, and
// for a second document, as any other file is: taking the removals out
// does not read it through a map first.
func TestRemovalKeepsStrictness(t *testing.T) {
	head := "apiVersion: lists.test.strata.dev/v1\nkind: Upstreams\n"
	for name, c := range map[string]struct{ dropIn, want string }{
		"a field twice":                 {head + "retries: 1\nretries: 2\nupstreams:\n- {name: a, $patch: delete}\n", `duplicate field "retries"`},
		"JSON field twice":              {`{"apiVersion":"lists.test.strata.dev/v1","kind":"Upstreams","retries":1,"retries":2,"upstreams":[{"name":"a","$patch":"delete"}]}`, `duplicate field "retries"`},
		"two documents":                 {head + "upstreams:\n- {name: a, $patch: delete}\n---\nbogus: 1\n", "holds several documents"},
		"without $patch, a field twice": {head + "retries: 1\nretries: 2\n", `duplicate field "retries"`}, // the control
	} {
		dropIn := c.dropIn
		dir := t.TempDir()
		ext := ".yaml"
		if dropIn[0] == '{' {
			ext = ".json"
		}
		watchtest.WriteFiles(t, dir, map[string]string{
			"c.yaml":          head + "upstreams:\n- {name: a, url: http://a}\n- {name: b, url: http://b}\n",
			"conf.d/10" + ext: dropIn,
		})
		_, _, err := upstreamsComponent(t).Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %s", name, err, c.want)
		}
	}
}
