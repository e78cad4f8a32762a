package scheme_test

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	config "github.com/stratacfg/strata/internal/testkind/component"
	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/internal/testkind/component/v1beta1"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

func codec(t testing.TB) *scheme.Kind {
	t.Helper()
	c, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const beta = "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n"

func TestDecodeDefaultsAndConverts(t *testing.T) {
	t.Parallel()
	c := codec(t)
	doc, err := c.Decode([]byte(beta+"port: 9443\nenableProfiling: false\n"), scheme.DecodeOptions{Source: "c.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	got := doc.Object.(*config.ComponentConfiguration)
	if got.Port != 9443 || got.EnableProfiling || got.SyncFrequency.Duration.String() != "1m0s" || got.ClientConnection.QPS != 50 {
		t.Errorf("decoded %+v: want port 9443, profiling false (explicit), sync 1m and qps 50 (defaults)", got)
	}
	if doc.GVK != v1beta1.SchemeGroupVersion.WithKind("ComponentConfiguration") {
		t.Errorf("GVK = %v", doc.GVK)
	}
}

func TestDecodeV1alpha1(t *testing.T) {
	t.Parallel()
	c := codec(t)
	in := "apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nprofiling: false\nport: 1234\n"
	doc, err := c.Decode([]byte(in), scheme.DecodeOptions{Source: "old.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Object.(*config.ComponentConfiguration); got.EnableProfiling || got.Port != 1234 {
		t.Errorf("v1alpha1 profiling: false decoded as %+v", got)
	}
	if len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0].String(), "old.yaml: apiVersion component.example.strata.dev/v1alpha1 is deprecated in v0.3; use component.example.strata.dev/v1beta1") {
		t.Errorf("warnings = %v, want one deprecation warning naming the replacement", doc.Warnings)
	}
	out, err := c.Encode(doc.Object, v1beta1.SchemeGroupVersion, scheme.YAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: component.example.strata.dev/v1beta1", "enableProfiling: false", "port: 1234"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("encoded as v1beta1:\n%s\nwant it to contain %q", out, want)
		}
	}
}

func TestDecodeModes(t *testing.T) {
	t.Parallel()
	c := codec(t)
	tests := []struct {
		name, in string
		mode     scheme.Mode
		err      string
		warn     string
	}{
		{name: "unknown field strict", in: beta + "port: 1\nbogus: 2\n", mode: scheme.Strict, err: `c.yaml: unknown field "bogus"`},
		{name: "unknown nested field strict", in: beta + "clientConnection:\n  qpz: 2\n", mode: scheme.Strict, err: `unknown field "clientConnection.qpz"`},
		{name: "duplicate field strict", in: beta + "port: 1\nport: 2\n", mode: scheme.Strict, err: `c.yaml: duplicate field "port" (line 4)`},
		{name: "duplicate field in JSON strict", in: `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","port":1,"port":2}`, mode: scheme.Strict, err: `duplicate field "port"`},
		{name: "unknown field warn", in: beta + "bogus: 2\n", mode: scheme.Warn, warn: `c.yaml: unknown field "bogus"`},
		{name: "duplicate field warn", in: beta + "port: 1\nport: 2\n", mode: scheme.Warn, warn: `duplicate field "port"`},
		{name: "unknown field ignore", in: beta + "bogus: 2\n", mode: scheme.Ignore},
		{name: "field case matters", in: beta + "Port: 2\n", mode: scheme.Strict, err: `unknown field "Port"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := c.Decode([]byte(tc.in), scheme.DecodeOptions{Source: "c.yaml", Mode: tc.mode})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, scheme.ErrStrict) {
					t.Fatalf("error = %v, want ErrStrict containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, w := range doc.Warnings {
				warnings = append(warnings, w.String())
			}
			if joined := strings.Join(warnings, "\n"); tc.warn != "" && !strings.Contains(joined, tc.warn) || tc.warn == "" && joined != "" {
				t.Errorf("warnings = %q, want %q", joined, tc.warn)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	c, err := scheme.New(func() scheme.Config { cfg := configscheme.Config(); cfg.MaxBytes = 64 << 10; return cfg }())
	if err != nil {
		t.Fatal(err)
	}
	bomb := "a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n"
	for i, p := range "bcdefghi" {
		prev := string("abcdefghi"[i])
		bomb += fmt.Sprintf("%c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", p, p, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	tests := []struct {
		name, in string
		kind     error
		msg      string
	}{
		{"empty", "", scheme.ErrEmpty, "c.yaml: the input is empty"},
		{"only comments", "# nothing\n", scheme.ErrEmpty, "the document is empty"},
		{"binary garbage", "\x00\x01\x02\xff\xfe", scheme.ErrSyntax, "c.yaml: the input is not valid UTF-8: byte 0xff at line 1, column 4"},
		{"garbage that is UTF-8", "\x00\x01\x02", scheme.ErrSyntax, "c.yaml: not valid YAML"},
		{"invalid UTF-8 in YAML", beta + "tlsCertFile: \"a\xffb\"\n", scheme.ErrSyntax, "not valid UTF-8: byte 0xff at line 3, column 16"},
		{"invalid UTF-8 in JSON", `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","tlsCertFile":"a` + "\xff" + `"}`, scheme.ErrSyntax, "not valid UTF-8: byte 0xff at line 1, column 102"},
		{"the internal version", "apiVersion: component.example.strata.dev/__internal\nkind: ComponentConfiguration\nPort: 5\n", scheme.ErrUnknownType,
			"apiVersion component.example.strata.dev/__internal is the in-memory version, never written down"},
		{"the internal version in a List", `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"component.example.strata.dev/__internal","kind":"ComponentConfiguration"}]}`, scheme.ErrUnknownType, "List item 1: apiVersion component.example.strata.dev/__internal is the in-memory version"},
		{"NaN", beta + "clientConnection: {qps: .nan}\n", scheme.ErrInvalid, "field clientConnection.qps: NaN is not a number JSON can hold"},
		{"infinity", beta + "clientConnection:\n  qps: -.inf\n", scheme.ErrInvalid, "field clientConnection.qps: -Inf is not a number JSON can hold"},
		{"a float over float32", beta + "clientConnection: {qps: 1e999}\n", scheme.ErrInvalid, "field clientConnection.qps: 1e999 is out of range for float32"},
		{"a float over float64", beta + "clientConnection: {qps: 1e309}\n", scheme.ErrInvalid, "field clientConnection.qps: 1e309 is out of range for float32"},
		{"a float over float32 only", beta + "clientConnection: {qps: 1e39}\n", scheme.ErrInvalid, "field clientConnection.qps: 1e+39 is out of range for float32"},
		{"a fraction for an integer", beta + "port: 1.5\n", scheme.ErrInvalid, "field port: 1.5 is not an integer (int32)"},
		{"an integer written with a fraction in JSON", `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","port":1.0}`, scheme.ErrInvalid, "field port: 1.0 is not written as an integer (int32)"},
		{"an integer written with an exponent in JSON", `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","port":1e3}`, scheme.ErrInvalid, "field port: 1e3 is not written as an integer (int32)"},
		{"an integer out of range in JSON", `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","port":1e10}`, scheme.ErrInvalid, "field port: 1e10 is out of range for int32"},
		{"an int over int32", beta + "port: 99999999999\n", scheme.ErrInvalid, "field port: 99999999999 is out of range for int32"},
		{"a bad duration", beta + "syncFrequency: 10x\n", scheme.ErrInvalid, `field syncFrequency: "10x": time: unknown unit "x" in duration "10x"`},
		{"an overflowing duration", beta + "syncFrequency: 9999999999999h\n", scheme.ErrInvalid, `field syncFrequency: "9999999999999h": time: invalid duration`},
		{"a bad duration in JSON", `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","logging":{"flushFrequency":"soon"}}`, scheme.ErrInvalid, `field logging.flushFrequency: "soon"`},
		{"not an object", "- a\n- b\n", scheme.ErrSyntax, "not an object"},
		{"broken YAML", "port: [1,\n", scheme.ErrSyntax, "not valid YAML"},
		{"no apiVersion", "kind: ComponentConfiguration\nport: 1\n", scheme.ErrTypeMeta, "no apiVersion: set apiVersion to one of component.example.strata.dev/v1beta1, component.example.strata.dev/v1alpha1"},
		{"no kind", "apiVersion: component.example.strata.dev/v1beta1\nport: 1\n", scheme.ErrTypeMeta, "no kind: set kind to ComponentConfiguration"},
		{"wrong kind", "apiVersion: component.example.strata.dev/v1beta1\nkind: Pod\n", scheme.ErrUnknownType, "kind Pod is not known"},
		{"wrong group", "apiVersion: v1\nkind: ConfigMap\n", scheme.ErrUnknownType, "apiVersion v1 is not in group component.example.strata.dev"},
		{"unknown version", "apiVersion: component.example.strata.dev/v9\nkind: ComponentConfiguration\n", scheme.ErrUnknownType, "apiVersion component.example.strata.dev/v9 is not known"},
		{"removed version", "apiVersion: component.example.strata.dev/v1alpha0\nkind: ComponentConfiguration\n", scheme.ErrRemovedVersion,
			"apiVersion component.example.strata.dev/v1alpha0 was removed in v0.2; use component.example.strata.dev/v1beta1: to migrate, run `component --config FILE --print-config`"},
		{"wrong type", beta + "port: eighty\n", scheme.ErrInvalid, "c.yaml: "},
		{"wrong type nested", beta + "clientConnection:\n  qps: fast\n", scheme.ErrInvalid, "qps"},
		{"oversize", beta + "tlsCertFile: " + strings.Repeat("x", 70<<10) + "\n", scheme.ErrTooLarge, "over the limit of 65536 bytes"},
		{"alias bomb", bomb, scheme.ErrAliases, "alias"},
		{"deep nesting", strings.Repeat("[", 20000), scheme.ErrSyntax, "not valid YAML"},
		{"two documents", beta + "---\n" + beta, scheme.ErrSyntax, "holds 2 documents; exactly one ComponentConfiguration is expected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Decode([]byte(tc.in), scheme.DecodeOptions{Source: "c.yaml"})
			if err == nil {
				t.Fatal("decoded bad input without an error")
			}
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "c.yaml: ") {
				t.Errorf("error = %q (%v), want %v naming c.yaml and containing %q", err, errors.Is(err, tc.kind), tc.kind, tc.msg)
			}
		})
	}
}

func TestWrongTypeNamesField(t *testing.T) {
	t.Parallel()
	_, err := codec(t).Decode([]byte(beta+"port: eighty\n"), scheme.DecodeOptions{Source: "c.yaml"})
	if err == nil || !strings.Contains(err.Error(), "port") {
		t.Errorf("error = %v, want it to name the field port", err)
	}
}

func TestExperimentalVersion(t *testing.T) {
	t.Parallel()
	cfg := configscheme.Config()
	cfg.Versions = append(cfg.Versions, scheme.Version{Version: "v2alpha1", Lifecycle: scheme.Experimental, AddToScheme: func(s *runtime.Scheme) error {
		// The experimental version reuses v1beta1's Go type and conversions.
		s.AddKnownTypeWithName(schema.GroupVersionKind{Group: config.GroupName, Version: "v2alpha1", Kind: "ComponentConfiguration"}, &v1beta1.ComponentConfiguration{})
		return nil
	}})
	c, err := scheme.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	in := []byte("apiVersion: component.example.strata.dev/v2alpha1\nkind: ComponentConfiguration\nport: 5\n")
	if _, err := c.Decode(in, scheme.DecodeOptions{Source: "x.yaml"}); !errors.Is(err, scheme.ErrExperimentalVersion) || !strings.Contains(err.Error(), "opt in") {
		t.Errorf("experimental without opt-in: %v", err)
	}
	doc, err := c.Decode(in, scheme.DecodeOptions{Source: "x.yaml", AllowExperimental: true})
	if err != nil || doc.Object.(*config.ComponentConfiguration).Port != 5 {
		t.Errorf("experimental with opt-in: %v", err)
	}
	if c.Preferred().Version != "v1beta1" {
		t.Errorf("Preferred() = %v, want v1beta1", c.Preferred())
	}
}

func TestDecodeAll(t *testing.T) {
	t.Parallel()
	c := codec(t)
	in := beta + "port: 1\n---\n# empty\n---\n" + `apiVersion: v1
kind: List
items:
- apiVersion: component.example.strata.dev/v1beta1
  kind: ComponentConfiguration
  port: 2
- {"apiVersion": "component.example.strata.dev/v1alpha1", "kind": "ComponentConfiguration", "port": 3}
`
	docs, err := c.DecodeAll([]byte(in), scheme.DecodeOptions{Source: "all.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, fmt.Sprintf("%d/%d:%d", d.Document, d.Item, d.Object.(*config.ComponentConfiguration).Port))
	}
	if strings.Join(got, " ") != "1/0:1 3/1:2 3/2:3" {
		t.Errorf("documents = %v, want 1/0:1 3/1:2 3/2:3 (document/item:port)", got)
	}
	bad := beta + "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: component.example.strata.dev/v1beta1\n  kind: ComponentConfiguration\n  port: x\n"
	if _, err := c.DecodeAll([]byte(bad), scheme.DecodeOptions{Source: "all.yaml"}); err == nil || !strings.HasPrefix(err.Error(), "all.yaml: document 2: List item 1: ") {
		t.Errorf("error in a List item = %v, want it to name the document and the item", err)
	}
	if _, err := c.DecodeAll([]byte("---\n# nothing\n"), scheme.DecodeOptions{Source: "all.yaml"}); !errors.Is(err, scheme.ErrEmpty) {
		t.Errorf("no documents: %v", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*scheme.Config){
		"no kind":           func(c *scheme.Config) { c.Kind = "" },
		"duplicate version": func(c *scheme.Config) { c.Versions = append(c.Versions, c.Versions[0]) },
		"no AddToScheme":    func(c *scheme.Config) { c.Versions[0].AddToScheme = nil },
		"kind not in preferred version": func(c *scheme.Config) {
			c.Kind = "Other"
		},
	} {
		cfg := configscheme.Config()
		mutate(&cfg)
		if _, err := scheme.New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	c := codec(f)
	for _, s := range []string{
		beta + "port: 1\n", beta + "featureGates: {A: true}\n", "apiVersion: v1\nkind: List\nitems: [{}]\n",
		"a: &a [1]\nb: *a\n", "{}", "---\n---\n", beta + "logging: {vmodule: [{filePattern: x, verbosity: 1}]}\n",
		`{"port": 1, "port": 2}`, "{port: 1, clientConnection: {qps: 2}}", "port: 1\n---\nport: 2\n",
	} {
		f.Add([]byte(s))
	}
	inherit := v1beta1.SchemeGroupVersion.WithKind("ComponentConfiguration")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mode := range []scheme.Mode{scheme.Strict, scheme.Warn, scheme.Ignore} {
			for _, opts := range []scheme.DecodeOptions{{Source: "fuzz", Mode: mode}, {Source: "fuzz", Mode: mode, Inherit: inherit}} {
				doc, err := c.Decode(data, opts)
				if err == nil && doc.Object == nil {
					t.Fatal("no error and no object")
				}
				if err != nil && !strings.HasPrefix(err.Error(), "fuzz: ") {
					t.Fatalf("error %q does not name the source", err)
				}
				// What reads the JSON reads each member once.
				if err == nil {
					if _, ferr := merge.Flatten(doc.JSON); ferr != nil {
						t.Fatalf("%s: decoded, and its JSON %s does not flatten: %v", mode, doc.JSON, ferr)
					}
				}
				_, _ = c.DecodeAll(data, opts)
			}
		}
	})
}

// TestManyProblemsShortMessage decodes a file of thousands of duplicate
// keys: the error lists a few and counts the rest, whatever the file's
// size.
func TestManyProblemsShortMessage(t *testing.T) {
	t.Parallel()
	c, err := scheme.New(configscheme.Config())
	if err != nil {
		t.Fatal(err)
	}
	in := beta + strings.Repeat("port: 1\n", 400_000)
	_, err = c.Decode([]byte(in), scheme.DecodeOptions{Source: "c.yaml"})
	if !errors.Is(err, scheme.ErrStrict) || len(err.Error()) > 4096 || !strings.Contains(err.Error(), `duplicate field "port" (line 4)`) || !strings.Contains(err.Error(), "399980 more duplicate fields") {
		t.Errorf("error (%d bytes): %.1000s", len(err.Error()), err)
	}
}

// TestExistingScheme builds the kind on a scheme that already holds its
// versions, as a component that has one (kubelet's) hands it over.
func TestExistingScheme(t *testing.T) {
	t.Parallel()
	s := runtime.NewScheme()
	configscheme.Install(s)
	cfg := configscheme.Config()
	cfg.Scheme, cfg.Internal = s, nil
	for i := range cfg.Versions {
		cfg.Versions[i].AddToScheme = nil
	}
	k, err := scheme.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if k.Scheme() != s {
		t.Error("the kind built a scheme of its own")
	}
	doc, err := k.Decode([]byte(beta+"port: 9000\n"), scheme.DecodeOptions{Source: "c.yaml"})
	if err != nil || doc.Object.(*config.ComponentConfiguration).Port != 9000 {
		t.Fatalf("decode: %v", err)
	}
	cfg.Scheme = nil
	if _, err := scheme.New(cfg); err == nil || !strings.Contains(err.Error(), "has no AddToScheme") {
		t.Errorf("no scheme and no AddToScheme: %v", err)
	}
}

// TestDefaulterPanic gives the kind a defaulter that panics, as kubelet's
// does on a feature gate it cannot set: the decode fails, naming the file.
func TestDefaulterPanic(t *testing.T) {
	t.Parallel()
	k, err := scheme.New(configscheme.Config())
	if err != nil {
		t.Fatal(err)
	}
	k.Scheme().AddTypeDefaultingFunc(&v1beta1.ComponentConfiguration{}, func(any) { panic("cannot set feature gate LockedThing") })
	_, err = k.Decode([]byte(beta), scheme.DecodeOptions{Source: "c.yaml"})
	if err == nil || !strings.Contains(err.Error(), "c.yaml: ") || !strings.Contains(err.Error(), "panicked: cannot set feature gate LockedThing") {
		t.Errorf("decode: %v", err)
	}
}

// TestCheck validates with a function that returns a plain error, an
// aggregate of messages that name their field.
func TestCheck(t *testing.T) {
	t.Parallel()
	cfg := configscheme.Config()
	cfg.Validate = nil
	cfg.Check = scheme.CheckFunc(func(c *config.ComponentConfiguration) error {
		return utilerrors.NewAggregate([]error{
			fmt.Errorf("invalid configuration: port (--port) %d must not be 9000", c.Port),
			fmt.Errorf("invalid configuration: clientConnection.qps is too low"),
			errors.New("something else entirely"),
		})
	})
	k, err := scheme.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	errs := k.Validate(&config.ComponentConfiguration{Port: 9000})
	var got []string
	for _, e := range errs {
		got = append(got, e.Field+" | "+e.Detail)
	}
	want := []string{
		"port | invalid configuration: port (--port) 9000 must not be 9000",
		"clientConnection.qps | invalid configuration: clientConnection.qps is too low",
		"<nil> | something else entirely",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBrokenYAMLWithGlobsIsSyntax: a document with a syntax error that
// happens to hold a '*' and a '&' (a glob, a URL's query) is not valid
// YAML, as without them, not an alias bomb.
func TestBrokenYAMLWithGlobsIsSyntax(t *testing.T) {
	t.Parallel()
	in := "# reads *.yaml; see https://example.com/doc?a=1&b=2\n" + beta + "port: [1,\n"
	_, err := codec(t).Decode([]byte(in), scheme.DecodeOptions{Source: "c.yaml"})
	if !errors.Is(err, scheme.ErrSyntax) || errors.Is(err, scheme.ErrAliases) || !strings.Contains(err.Error(), "not valid YAML") {
		t.Errorf("%v, want ErrSyntax, not valid YAML", err)
	}
}

// TestDocumentsShareTheAliasLimit: twelve documents, each under the alias
// limit on its own, take what their aliases expand to from one limit for
// the input: decoding them costs about it, not twelve times it.
func TestDocumentsShareTheAliasLimit(t *testing.T) {
	k := codec(t)
	one := beta + "tlsCertFile: &a " + strings.Repeat("h", 7000) + "\nallowedOrigins: [" + strings.Repeat("*a,", 2299) + "*a]\n"
	allocated := func(in string) (uint64, error) {
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		_, err := k.DecodeAll([]byte(in), scheme.DecodeOptions{Source: "c.yaml"})
		goruntime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, err
	}
	single, err := allocated(one)
	if errors.Is(err, scheme.ErrAliases) {
		t.Fatalf("one document is under the limit: %v", err)
	}
	all, err := allocated(strings.Repeat("---\n"+one, 12))
	if !errors.Is(err, scheme.ErrAliases) {
		t.Errorf("%v, want the documents past the input's alias limit refused", err)
	}
	if all > 2*single {
		t.Errorf("twelve documents allocated %d MiB, one %d MiB", all>>20, single>>20)
	}
}

// TestDuplicateFieldsInJSONTakeTheLast: a JSON document that gives a
// member twice decodes in warn and ignore modes, and its Document's JSON
// holds the member once, as the decoder took it (the last), so that what
// reads the JSON (a file's layer) reads what the object holds.
func TestDuplicateFieldsInJSONTakeTheLast(t *testing.T) {
	t.Parallel()
	c := codec(t)
	in := `{"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration","port":1,"clientConnection":{"qps":2.50,"qps":3.50},"port":2}`
	for _, mode := range []scheme.Mode{scheme.Warn, scheme.Ignore} {
		doc, err := c.Decode([]byte(in), scheme.DecodeOptions{Source: "c.json", Mode: mode})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		want := `{"apiVersion":"component.example.strata.dev/v1beta1","clientConnection":{"qps":3.50},"kind":"ComponentConfiguration","port":2}`
		if got := doc.Object.(*config.ComponentConfiguration); got.Port != 2 || got.ClientConnection.QPS != 3.5 || string(doc.JSON) != want {
			t.Errorf("%s: port %d, qps %v, JSON %s; want port 2, qps 3.5 and JSON %s", mode, got.Port, got.ClientConnection.QPS, doc.JSON, want)
		}
	}
}

// TestInherit: a document that names neither apiVersion nor kind takes
// DecodeOptions.Inherit's, and is otherwise decoded as written: its
// duplicate fields are refused in strict mode, its other documents
// counted; one that names either must name both.
func TestInherit(t *testing.T) {
	t.Parallel()
	c := codec(t)
	opts := scheme.DecodeOptions{Source: "10.yaml", Inherit: v1beta1.SchemeGroupVersion.WithKind("ComponentConfiguration")}
	doc, err := c.Decode([]byte("port: 7\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Object.(*config.ComponentConfiguration); got.Port != 7 || doc.GVK != opts.Inherit {
		t.Errorf("port %d, GVK %v", got.Port, doc.GVK)
	}
	for in, want := range map[string]error{
		"port: 1\n---\nport: 2\n":                          scheme.ErrSyntax, // holds 2 documents
		"port: 1\n---\nbogus: 2\n":                         scheme.ErrStrict,
		`{"port": 1, "port": 2}`:                           scheme.ErrStrict,
		"kind: ComponentConfiguration\nport: 1\n":          scheme.ErrTypeMeta,
		"apiVersion: component.example.strata.dev/v1beta1": scheme.ErrTypeMeta,
	} {
		if _, err := c.Decode([]byte(in), opts); !errors.Is(err, want) {
			t.Errorf("%q: error %v, want %v", in, err, want)
		}
	}
}

// TestFlowStyleYAML: a YAML document in flow style starts with '{' as
// JSON does; it is YAML all the same.
func TestFlowStyleYAML(t *testing.T) {
	t.Parallel()
	c := codec(t)
	doc, err := c.Decode([]byte("{apiVersion: component.example.strata.dev/v1beta1, kind: ComponentConfiguration, port: 9001}\n"), scheme.DecodeOptions{Source: "c.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Object.(*config.ComponentConfiguration); got.Port != 9001 {
		t.Errorf("port %d, want 9001", got.Port)
	}
	if _, err := c.Decode([]byte(`{"apiVersion": "component.example.strata.dev/v1beta1", "kind": "ComponentConfiguration", "port": [1, }`), scheme.DecodeOptions{Source: "c.json"}); !errors.Is(err, scheme.ErrSyntax) || !strings.Contains(err.Error(), "c.json") {
		t.Errorf("broken JSON: error %v, want ErrSyntax naming c.json", err)
	}
}

// TestDuplicateObjectMemberInJSON: a JSON document that gives an object
// member twice decodes, in warn and ignore modes, as the same document in
// YAML does (the last given, whole; the decoder alone would merge the two
// objects into one struct), and its Document.JSON decodes to its Object.
func TestDuplicateObjectMemberInJSON(t *testing.T) {
	c := codec(t)
	head := `"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration"`
	in := `{` + head + `,"clientConnection":{"qps":5},"clientConnection":{"burst":7}}`
	for _, mode := range []scheme.Mode{scheme.Warn, scheme.Ignore} {
		doc, err := c.Decode([]byte(in), scheme.DecodeOptions{Source: "c.json", Mode: mode})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		again, err := c.Decode(doc.JSON, scheme.DecodeOptions{Source: "again.json", Mode: scheme.Strict})
		if err != nil {
			t.Fatalf("%s: its JSON %s: %v", mode, doc.JSON, err)
		}
		got, want := doc.Object.(*config.ComponentConfiguration), again.Object.(*config.ComponentConfiguration)
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: the Object has clientConnection qps %v burst %v; its Document.JSON %s decodes to qps %v burst %v",
				mode, got.ClientConnection.QPS, got.ClientConnection.Burst, doc.JSON, want.ClientConnection.QPS, want.ClientConnection.Burst)
		}
		yamlDoc, err := c.Decode([]byte("apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nclientConnection: {qps: 5}\nclientConnection: {burst: 7}\n"),
			scheme.DecodeOptions{Source: "c.yaml", Mode: mode})
		if err != nil {
			t.Fatalf("%s: yaml: %v", mode, err)
		}
		if y := yamlDoc.Object.(*config.ComponentConfiguration); !equality.Semantic.DeepEqual(got, y) {
			t.Errorf("%s: JSON gives qps %v, the same document in YAML qps %v", mode, got.ClientConnection.QPS, y.ClientConnection.QPS)
		}
	}
}

// TestDocumentEndMarker: "..." ends a YAML document; what follows it
// is a second document. Decode, which takes exactly one, must not take
// the first and drop the second in silence.
func TestDocumentEndMarker(t *testing.T) {
	c := codec(t)
	in := "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nport: 1\n...\nport: 2\n"
	doc, err := c.Decode([]byte(in), scheme.DecodeOptions{Source: "c.yaml", Mode: scheme.Strict})
	if err == nil {
		t.Errorf("decoded port %d: the document after \"...\" was dropped in silence", doc.Object.(*config.ComponentConfiguration).Port)
	}
}

// TestDuplicateMemberFirstValueInvalid: in warn and ignore modes a
// member given twice is the last given, whole, as in YAML: the
// first value is not read, so a first value of the wrong type must not
// refuse a document its YAML twin decodes.
func TestDuplicateMemberFirstValueInvalid(t *testing.T) {
	c := codec(t)
	head := `"apiVersion":"component.example.strata.dev/v1beta1","kind":"ComponentConfiguration"`
	for _, mode := range []scheme.Mode{scheme.Warn, scheme.Ignore} {
		yamlDoc, yerr := c.Decode([]byte("apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nport: eighty\nport: 80\n"), scheme.DecodeOptions{Source: "c.yaml", Mode: mode})
		_, jerr := c.Decode([]byte(`{`+head+`,"port":"eighty","port":80}`), scheme.DecodeOptions{Source: "c.json", Mode: mode})
		if (yerr == nil) != (jerr == nil) {
			port := int32(-1)
			if yerr == nil {
				port = yamlDoc.Object.(*config.ComponentConfiguration).Port
			}
			t.Errorf("%s: YAML decodes (port %d, error %v); the same document in JSON: %v", mode, port, yerr, jerr)
		}
	}
}
