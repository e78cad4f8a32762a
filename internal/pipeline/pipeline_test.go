package pipeline

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	testscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/target"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/zpages"
)

// TestDefaultedUnderAWholeValue: a ConfigMap key that holds a struct
// arrives as one leaf, here clientConnection set to {burst: 20}, and
// defaulting fills the members the layer left out (qps, contentType).
// Keys only defaulting filled are reported as default: read as /configz
// and validation read it (the key's source, or its nearest ancestor's
// source of the member), qps is defaulting's and burst the layer's.
func TestDefaultedUnderAWholeValue(t *testing.T) {
	_, cm, res, versioned := decodedWhole(t, "clientConnection", "burst: 20\n")
	flat, err := flatten(versioned)
	if err != nil {
		t.Fatal(err)
	}
	if flat["/clientConnection/burst"] != "20" || flat["/clientConnection/qps"] == "" || flat["/clientConnection/qps"] == "0" {
		t.Fatalf("clientConnection is %v %v; want burst 20 and qps defaulted", flat["/clientConnection/burst"], flat["/clientConnection/qps"])
	}
	sourceOf := func(key string) merge.Source {
		for k := key; k != ""; k = k[:strings.LastIndexByte(k, '/')] {
			if src, ok := res.SourceOfMember(k, key[len(k):]); ok {
				return src
			}
		}
		return merge.Source{}
	}
	if src := sourceOf("/clientConnection/burst"); src != cm {
		t.Errorf("burst is credited to %v; want %v", src, cm)
	}
	if src := sourceOf("/clientConnection/qps"); src.Origin != OriginDefault {
		t.Errorf("qps, which defaulting filled, is credited to %v; want %s", src, OriginDefault)
	}
	if v := res.Values()["/clientConnection"]; !strings.Contains(v, `"qps"`) || !strings.Contains(v, `"burst":20`) {
		t.Errorf("the effective clientConnection is %s; want it whole, as defaulted", v)
	}

	// As /configz and a validation error tell them.
	doc, err := json.Marshal(versioned)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	zpages.Install(mux, zpages.Pages{Name: "test", Configs: func(*http.Request) (map[string]zpages.Config, error) {
		return map[string]zpages.Config{"test": {Object: doc, Provenance: res}}, nil
	}})
	req := httptest.NewRequest(http.MethodGet, "/configz", nil)
	req.Header.Set("Accept", "text/plain")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	text, _ := io.ReadAll(rec.Body)
	for _, want := range []string{"/clientConnection/burst=20 (namespace team-a/config", "/clientConnection/qps=", "/clientConnection/contentType="} {
		line := ""
		for l := range strings.SplitSeq(string(text), "\n") {
			if strings.Contains(l, want) {
				line = l
			}
		}
		if line == "" || want != "/clientConnection/burst=20 (namespace team-a/config" && !strings.Contains(line, "(default") {
			t.Errorf("/configz: no line %q, or not credited to defaulting:\n%s", want, text)
		}
	}
	errs := validation.Attribute(field.ErrorList{field.Invalid(field.NewPath("clientConnection", "qps"), 0, "bad")}, res, versioned)
	if len(errs) != 1 || errs[0].Source.Origin != OriginDefault {
		t.Errorf("an error on qps is credited to %v; want %s", errs[0].Source, OriginDefault)
	}
}

// TestWholeValueMemberTheLayerSetInAnotherForm: a member a layer set in
// a whole value, in a form defaulting writes otherwise (flushFrequency 1m,
// "1m0s" once decoded), is the layer's where defaulting refilled the
// value: for SourceOfMember and for a validation error on it.
func TestWholeValueMemberTheLayerSetInAnotherForm(t *testing.T) {
	key, cm, res, versioned := decodedWhole(t, "logging", "flushFrequency: 1m\n")
	if src, _ := res.SourceOfMember(key, "/format"); src.Origin != OriginDefault {
		t.Fatalf("format, which defaulting filled, is credited to %v; want %s (the refill this test is about did not happen)", src, OriginDefault)
	}
	if src, _ := res.SourceOfMember(key, "/flushFrequency"); src != cm {
		t.Errorf("flushFrequency, which %v set to 1m, is credited to %v", cm, src)
	}
	errs := validation.Attribute(field.ErrorList{field.Invalid(field.NewPath("logging", "flushFrequency"), "1m", "bad")}, res, versioned)
	if len(errs) != 1 || errs[0].Source != cm {
		t.Errorf("an error on logging.flushFrequency is credited to %v; want %v", errs[0].Source, cm)
	}
}

// TestWholeValueContestSurvivesTheRefill: two selector layers of one class
// and rank that set clientConnection, one ConfigMap key, to different
// values contest it (Selectors.RefuseContests refuses that), whether or
// not defaulting refilled the value.
func TestWholeValueContestSurvivesTheRefill(t *testing.T) {
	k, err := testscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	layer := func(name, yaml string) *target.Layer {
		key, j, err := typeOf(k).ConvertMember("clientConnection", yaml)
		if err != nil {
			t.Fatal(err)
		}
		src := merge.Source{Origin: "selector", Name: name}
		return &target.Layer{Layer: &merge.Layer{Source: src, Values: map[string]string{key: j}}, Class: "selector", Name: name}
	}
	for _, tc := range []struct {
		name string
		a, b string
	}{
		{"all members set", "burst: 20\nqps: 5\ncontentType: application/json\n", "burst: 30\nqps: 5\ncontentType: application/json\n"},
		{"defaulting fills qps", "burst: 20\n", "burst: 30\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applied := []*target.Layer{layer("a", tc.a), layer("b", tc.b)}
			res := merge.Merge(target.Layers(applied)...)
			if _, _, err := Decode[runtime.Object](k, res.Values(), res, Hooks{}); err != nil {
				t.Fatal(err)
			}
			c := target.Contests(applied, res)
			if len(c) != 1 || c[0].Key != "/clientConnection" {
				t.Errorf("contests %+v; want /clientConnection, which a and b set to different values", c)
			}
		})
	}
}

// decodedWhole decodes the test component's configuration of one layer,
// a ConfigMap's, that sets member whole to value (YAML), and returns the
// member's key, the layer's source, the merge and the decoded object.
func decodedWhole(t *testing.T, member, value string) (string, merge.Source, *merge.Result, runtime.Object) {
	t.Helper()
	k, err := testscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	key, j, err := typeOf(k).ConvertMember(member, value)
	if err != nil {
		t.Fatal(err)
	}
	cm := merge.Source{Origin: "namespace", Name: "team-a/config"}
	res := merge.Merge(&merge.Layer{Source: cm, Values: map[string]string{key: j}})
	versioned, _, err := Decode[runtime.Object](k, res.Values(), res, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	return key, cm, res, versioned
}
