package manifests

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/watch"
)

// The tests load ValidatingAdmissionPolicies and their bindings through
// k8s.io/api's types and a scheme of their own, with the hooks a
// component writes for its kinds: an Accept that takes the two kinds and
// their lists and requires a validation, references from a binding to its
// policy.

const suffix = ".static.strata.dev"

func policyOptions(t testing.TB) Options {
	t.Helper()
	s := runtime.NewScheme()
	if err := admissionv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddUnversionedTypes(metav1.SchemeGroupVersion, &metav1.List{}, &metav1.Status{})
	return Options{
		Decoder:    serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer(),
		Accept:     acceptPolicies,
		NameSuffix: suffix,
		References: bindingReferences,
	}
}

func acceptPolicies(obj runtime.Object) ([]runtime.Object, error) {
	switch o := obj.(type) {
	case *admissionv1.ValidatingAdmissionPolicy:
		if len(o.Spec.Validations) == 0 {
			return nil, field.Required(field.NewPath("spec", "validations"), "")
		}
		return []runtime.Object{o}, nil
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		return []runtime.Object{o}, nil
	case *admissionv1.ValidatingAdmissionPolicyList:
		var out []runtime.Object
		for i := range o.Items {
			items, err := acceptPolicies(&o.Items[i])
			if err != nil {
				return nil, err
			}
			out = append(out, items...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w %T", ErrUnsupportedType, obj)
}

func bindingReferences(obj runtime.Object) []Reference {
	if b, ok := obj.(*admissionv1.ValidatingAdmissionPolicyBinding); ok {
		return []Reference{{Field: field.NewPath("spec", "policyName"), Kind: "ValidatingAdmissionPolicy", Name: b.Spec.PolicyName}}
	}
	return nil
}

func policy(name string) string {
	return "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: " + name + "}\nspec: {validations: [{expression: 'true'}]}\n"
}

func binding(name, policy string) string {
	return "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: " + name + "}\nspec: {policyName: " + policy + ", validationActions: [Deny]}\n"
}

func TestLoadProvenance(t *testing.T) {
	t.Parallel()
	s := &watch.Generation{Path: "/m", Dir: true, Files: []watch.Entry{
		{Name: "a.yaml", Data: []byte(policy("a"+suffix) + "---\n\n---\n" + policy("b"+suffix))},
		{Name: "b.json", Data: []byte(`{"apiVersion":"anything/v9","kind":"List","items":[{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"c` + suffix + `"},"spec":{"policyName":"a` + suffix + `"}}]}`)},
		{Name: "c.yml", Data: nil},
		{Name: "d.YAML", Data: []byte("  \n\n")},
		{Name: "notes.txt", Data: []byte("not a manifest")},
	}, Hash: "sha256:x"}
	set, err := Load(s, policyOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range set.Objects {
		got = append(got, m.Kind+"/"+m.Name+" from "+m.Source().String())
	}
	want := []string{
		"ValidatingAdmissionPolicy/a" + suffix + " from manifest /m/a.yaml#1",
		"ValidatingAdmissionPolicy/b" + suffix + " from manifest /m/a.yaml#2",
		"ValidatingAdmissionPolicyBinding/c" + suffix + " from manifest /m/b.json[1]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if set.Hash != "sha256:x" {
		t.Fatalf("hash %s", set.Hash)
	}
}

// TestLoadRefuses loads what kube-apiserver refuses, one case a
// directory, and checks that the whole set is refused with an error that
// names the file and the problem.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"a comment-only document", map[string]string{"a.yaml": "# header\n---\n" + policy("a"+suffix)},
			[]string{"/m/a.yaml#1: Object 'Kind' is missing in '# header'"}},
		{"an unknown field", map[string]string{"a.yaml": strings.Replace(policy("a"+suffix), "spec:", "spec: {bogus: 1}\nx:", 1)},
			[]string{"/m/a.yaml: strict decoding error"}},
		{"a duplicate key", map[string]string{"a.yaml": policy("a"+suffix) + "kind: ValidatingAdmissionPolicy\n"},
			[]string{`/m/a.yaml: `, `already set in map`}},
		{"an unregistered kind", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
			[]string{`/m/a.yaml: no kind "ConfigMap" is registered for version "v1"`}},
		{"a kind the set does not take", map[string]string{"a.yaml": "apiVersion: v1\nkind: Status\n"},
			[]string{"/m/a.yaml: unsupported type *v1.Status"}},
		{"a null List item", map[string]string{"a.json": `{"apiVersion":"v1","kind":"List","items":[null]}`},
			[]string{"/m/a.json[1]: Object 'Kind' is missing"}},
		{"an invalid object", map[string]string{"a.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: a" + suffix + "}\n"},
			[]string{"/m/a.yaml: spec.validations: Required value"}},
		{"a bad separator", map[string]string{"a.yaml": policy("a"+suffix) + "---foo\n"},
			[]string{"/m/a.yaml: invalid Yaml document separator: foo"}},
		{"no name", map[string]string{"a.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nspec: {policyName: p}\n"},
			[]string{"manifest /m/a.yaml: metadata.name: Required value"}},
		{"no suffix", map[string]string{"a.yaml": policy("plain")},
			[]string{`manifest /m/a.yaml: metadata.name: Invalid value: "plain": ValidatingAdmissionPolicy names must end in ".static.strata.dev"`}},
		{"a name twice", map[string]string{"01.yaml": policy("a" + suffix), "02.yaml": policy("a" + suffix)},
			[]string{"manifest /m/02.yaml: metadata.name: Duplicate value: \"ValidatingAdmissionPolicy a.static.strata.dev is also defined by manifest /m/01.yaml\""}},
		{"a binding to nothing", map[string]string{"a.yaml": binding("b"+suffix, "gone"+suffix)},
			[]string{`manifest /m/a.yaml: spec.policyName: Not found: "ValidatingAdmissionPolicy gone.static.strata.dev is not in the set"`}},
		{"a name the API server refuses", map[string]string{"a.yaml": policy("Upper" + suffix), "b.yaml": policy(strings.Repeat("x", 250) + suffix)},
			[]string{`manifest /m/a.yaml: metadata.name: Invalid value: "Upper.static.strata.dev": a lowercase RFC 1123 subdomain`, "must be no more than 253 characters"}},
		{"Lists nested too deep", map[string]string{"a.json": strings.Repeat(`{"apiVersion":"v1","kind":"List","items":[`, 20) + strings.Repeat(`]}`, 20)},
			[]string{"Lists nest more than 16 deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &watch.Generation{Path: "/m", Dir: true}
			for _, name := range slices.Sorted(maps.Keys(tc.files)) {
				g.Files = append(g.Files, watch.Entry{Name: name, Data: []byte(tc.files[name])})
			}
			set, err := Load(g, policyOptions(t))
			if err == nil {
				t.Fatalf("loaded %v", set.Names())
			}
			var me *Error
			if !errors.As(err, &me) || me.Dir != "/m" {
				t.Errorf("error %T, want a *Error for /m", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestLoadReportsEveryError loads three bad files: kube-apiserver
// stops at the first; the error here names all three.
func TestLoadReportsEveryError(t *testing.T) {
	t.Parallel()
	s := &watch.Generation{Path: "/m", Dir: true, Files: []watch.Entry{
		{Name: "a.yaml", Data: []byte(policy("a"))},
		{Name: "b.yaml", Data: []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: b" + suffix + "}\n")},
		{Name: "c.yaml", Data: []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: Nope\n")},
	}}
	_, err := Load(s, policyOptions(t))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"manifest /m/a.yaml: metadata.name", "must end in", "/m/b.yaml: spec.validations", `/m/c.yaml: no kind "Nope" is registered`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestComposite(t *testing.T) {
	t.Parallel()
	static := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "s" + suffix}}
	set := &Set{Objects: []*Manifest{{Object: static, Kind: "ValidatingAdmissionPolicy", Name: static.Name}}}
	dyn := func(name string) runtime.Object {
		p := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"))
		return p
	}
	c := &Composite{
		Static:         func() *Set { return set },
		Dynamic:        func() []runtime.Object { return []runtime.Object{dyn("api"), dyn("spoof" + suffix)} },
		ReservedSuffix: suffix,
	}
	objs, refused := c.List()
	var names []string
	for _, o := range objs {
		names = append(names, o.(*admissionv1.ValidatingAdmissionPolicy).Name)
	}
	if strings.Join(names, ",") != "s"+suffix+",api" {
		t.Fatalf("objects %v", names)
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Error(), `ValidatingAdmissionPolicy "spoof.static.strata.dev" refused`) {
		t.Fatalf("refused %v", refused)
	}
}

// FuzzLoad feeds arbitrary file content to the manifest loader:
// it must never panic, and what it accepts must be named, suffixed and
// accepted.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(policy("a" + suffix)))
	f.Add([]byte(policy("a"+suffix) + "---\n" + policy("a"+suffix)))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[]}`))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("# only\n---\n---\n"))
	opts := policyOptions(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Load(&watch.Generation{Path: "/m", Dir: true, Files: []watch.Entry{{Name: "f.yaml", Data: data}}}, opts)
		if err != nil {
			return
		}
		for _, m := range set.Objects {
			if !strings.HasSuffix(m.Name, suffix) {
				t.Fatalf("accepted an unsuffixed object %+v", m)
			}
			if _, err := acceptPolicies(m.Object); err != nil {
				t.Fatalf("accepted an object Accept refuses: %v", err)
			}
		}
	})
}

// TestWatchIgnoresWhatIsNoManifest puts beside the manifests what the
// loader documents as ignored, made as hostile as it gets: a dangling
// README, a FIFO notes.txt, an oversize backup, a directory with a
// manifest's name. None is read; a link to a directory with a manifest's
// name is refused, as kube-apiserver refuses it.
func TestWatchIgnoresWhatIsNoManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{
		"a.yaml":     policy("a" + suffix),
		".b.yaml":    policy("b" + suffix), // read, as kube-apiserver reads it
		"a.yaml.bak": strings.Repeat("x", files.DefaultMaxBytes+1),
		"sub.yaml/x": "a directory with a manifest's name",
	})
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "notes.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Watch(dir, policyOptions(t))
	g, err := watch.Read(dir, opts.Read)
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load(g, policyOptions(t))
	if err != nil || strings.Join(set.Names(), ",") != "ValidatingAdmissionPolicy/a"+suffix+",ValidatingAdmissionPolicy/b"+suffix {
		t.Fatalf("set %v, %v", set, err)
	}

	if err := os.Symlink(filepath.Join(dir, "sub.yaml"), filepath.Join(dir, "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	if g, err = watch.Read(dir, opts.Read); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(g, policyOptions(t)); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "linked.yaml")+": a symbolic link to a directory, not a file") {
		t.Errorf("a link to a directory: %v", err)
	}
}

// TestWatchReadsFilesAsStored: kube-apiserver reads a manifest with
// os.ReadFile and decompresses nothing, so a gzip'd one does not decode
// there, and its hash is of the stored bytes. The watcher's reads must
// check that same file: the gzip'd manifest is refused, naming it.
func TestWatchReadsFilesAsStored(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(policy("a" + suffix))); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := watch.Read(dir, Watch(dir, policyOptions(t)).Read)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Files[0].Data; !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("read %d bytes, want the %d stored", len(got), b.Len())
	}
	set, err := Load(g, policyOptions(t))
	if err == nil {
		t.Fatalf("a gzip'd manifest loaded as %v, hash %s; kube-apiserver cannot decode it", set.Names(), set.APIServerHash)
	}
	if !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("error %q does not name a.yaml", err)
	}
	t.Log(err)
}

// TestAliasBombRefused: a manifest of 214 KB whose YAML aliases one
// 64 KiB scalar 30,000 times (2 GB written out in full by the decoder)
// is refused naming the file, before it expands.
func TestAliasBombRefused(t *testing.T) {
	bomb := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: a" + suffix + "}\n" +
		"spec:\n  validations:\n  - expression: 'true'\n  matchConditions:\n  - &a {name: " + strings.Repeat("x", 64<<10) + ", expression: 'true'}\n" +
		strings.Repeat("  - *a\n", 30_000)
	g := &watch.Generation{Path: "/m", Dir: true, Files: []watch.Entry{{Name: "a.yaml", Data: []byte(bomb)}}}
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	_, err := Load(g, policyOptions(t))
	goruntime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "/m/a.yaml") || !strings.Contains(err.Error(), "YAML aliasing") {
		t.Errorf("%v, want the alias bomb refused naming the file", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("refusing it allocated %d MiB", alloc>>20)
	}
}

// TestWatchSeesLinksToDirectories: a link to a directory with a
// manifest's name refuses the set (kube-apiserver's os.ReadFile of it
// fails), though no file read shows it: the watcher tries the set again
// when one is added (a refusal reported) and when it is removed (the
// fixed set loaded), where it took both for "no change".
func TestWatchSeesLinksToDirectories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": policy("a" + suffix), "sub/x": "x"})
	reloads := make(chan watch.Reload[*Set], 64)
	wo := Watch(dir, policyOptions(t))
	wo.PollInterval = time.Hour
	wo.OnReload = func(r watch.Reload[*Set]) { reloads <- r }
	w, err := watch.New(wo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); <-w.Done() }()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-reloads // the initial load
	next := func(what string) watch.Reload[*Set] {
		t.Helper()
		w.Resync()
		select {
		case r := <-reloads:
			return r
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no reload attempt reported", what)
			return watch.Reload[*Set]{}
		}
	}
	if err := os.Symlink("sub", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if r := next("link.yaml added"); r.Status != watch.StatusFailure {
		t.Errorf("link.yaml, a link to a directory, added: %s, want a failure", r.Status)
	}
	watchtest.WriteFiles(t, dir, map[string]string{"b.yaml": policy("b" + suffix)})
	if err := os.Remove(filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if r := next("link.yaml removed"); r.Status != watch.StatusSuccess || len(w.Current().Names()) != 2 {
		t.Errorf("link.yaml removed, b.yaml added: %s, in effect %v", r.Status, w.Current().Names())
	}
}

// TestLinksOut: a manifest linked in from outside the directory refuses
// the set, naming the link; with Options.LinksOut it is read, as
// kube-apiserver's os.ReadFile reads it.
func TestLinksOut(t *testing.T) {
	t.Parallel()
	shared, dir := t.TempDir(), t.TempDir()
	watchtest.WriteFiles(t, shared, map[string]string{"shared.yaml": policy("shared" + suffix)})
	watchtest.WriteFiles(t, dir, map[string]string{"a.yaml": policy("a" + suffix)})
	if err := os.Symlink(filepath.Join(shared, "shared.yaml"), filepath.Join(dir, "shared.yaml")); err != nil {
		t.Fatal(err)
	}
	opts := policyOptions(t)
	if _, err := watch.Read(dir, Watch(dir, opts).Read); !errors.Is(err, files.ErrOutside) || !strings.Contains(err.Error(), filepath.Join(dir, "shared.yaml")) {
		t.Errorf("a link out: %v, want ErrOutside naming it", err)
	}
	opts.LinksOut = true
	g, err := watch.Read(dir, Watch(dir, opts).Read)
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load(g, opts)
	if err != nil || len(set.Names()) != 2 {
		t.Errorf("with LinksOut: %v, %v", set, err)
	}
}

// TestManyDocumentsShareTheAliasLimit: a file of 100 documents, each under
// the alias limit on its own (a 900-byte scalar aliased 1,000 times
// through nested anchors, under go-yaml's own guard), takes what its
// aliases expand to from one limit for the set, not 100.
func TestManyDocumentsShareTheAliasLimit(t *testing.T) {
	one := "a: &a " + strings.Repeat("x", 900) + "\n" +
		"b: &b [" + strings.Repeat("*a,", 9) + "*a]\n" +
		"c: &c [" + strings.Repeat("*b,", 9) + "*b]\n" +
		"d: [" + strings.Repeat("*c,", 9) + "*c]\n"
	data := []byte(strings.Repeat(one+"---\n", 100))
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	_, err := Load(&watch.Generation{Path: "/m", Dir: true, Files: []watch.Entry{{Name: "f.yaml", Data: data}}}, policyOptions(t))
	goruntime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "YAML aliasing") {
		t.Errorf("%v, want the documents past the set's alias limit refused", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("loading it allocated %d MiB", alloc>>20)
	}
}
