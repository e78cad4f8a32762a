package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

// byCluster is a PluginOverride of app for the clusters labelled
// env=prod: the override-by-both rung, one rank.
func byCluster(name, created, items string) string {
	return strings.Replace(override(name, created, items), "  pluginDefinitionNames: [app]\n",
		"  pluginDefinitionNames: [app]\n  clusterSelector: {labelSelector: {matchLabels: {env: prod}}}\n", 1)
}

// TestContests: two overrides as specific as each other that set one
// option to different values contest it, in the provenance `template`
// prints, whole values and values at paths alike; one of another rung, or
// one that agrees, does not; --contests=error makes a contest an error
// naming both; and the validating webhook warns of the contests an
// override would make, or refuses it when contests are errors.
func TestContests(t *testing.T) {
	def := strings.Replace(mapDefinition, "  - {name: size, type: int, default: 1, required: false}\n",
		"  - {name: size, type: int, default: 1, required: false}\n  - {name: password, type: secret, required: false}\n", 1)
	docs := []string{def, cluster, mapPreset, presetPlugin,
		byCluster("old", "2026-01-01T00:00:00Z", "  - {name: size, value: 2}\n  - {name: resources, path: /limits/cpu, value: \"2\"}\n  - name: password\n    valueFrom: {secret: {name: s1, key: k}}\n"),
		byCluster("new", "2026-01-02T00:00:00Z", "  - {name: size, value: 3}\n  - {name: resources, path: /limits/cpu, value: \"3\"}\n  - name: password\n    valueFrom: {secret: {name: s2, key: k}}\n"),
		byCluster("agrees", "2026-01-03T00:00:00Z", "  - {name: size, value: 3}\n"),
		override("generic", "2026-01-04T00:00:00Z", "  - {name: size, value: 9}\n"),
	}
	dir := scenario(t, docs...)
	code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, res := values(t, out)
	contested := func(option string) []string {
		var out []string
		for _, c := range res.Provenance[option].Contested {
			out = append(out, c.Source+"="+describe(c))
		}
		return out
	}
	// new agrees with agrees, the winner: only old contests.
	if got, want := contested("size"), []string{"PluginOverride org/old=2"}; res.Provenance["size"].Source != "PluginOverride org/agrees" || !slices.Equal(got, want) {
		t.Errorf("size: %+v, contested %v, want %v", res.Provenance["size"], got, want)
	}
	if got, want := contested("password"), []string{"PluginOverride org/old=secret s1#k"}; !slices.Equal(got, want) {
		t.Errorf("password: contested %v, want %v (by reference)", got, want)
	}
	if got, want := contested("resources"), []string{`PluginOverride org/old spec.overrides[1] (resources) at /limits/cpu="2"`}; !slices.Equal(got, want) {
		t.Errorf("resources: contested %v, want %v", got, want)
	}
	if strings.Contains(out, `"s1"`) && !strings.Contains(out, `"name": "s1"`) {
		t.Error("a Secret's reference shown other than by name")
	}

	code, out, stderr = runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1", "--contests=error")
	if want := `option "size" is contested: PluginOverride org/agrees wins by creation time, then name, over PluginOverride org/old, as specific, which gives 2 (contests are errors here)`; code != 1 || out != "" || !strings.Contains(stderr, want) {
		t.Errorf("--contests=error: exit %d, %q; want 1 and %q", code, stderr, want)
	}
	if code, _, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1", "--contests=maybe"); code != 2 || !strings.Contains(stderr, `"maybe": warn or error`) {
		t.Errorf("--contests=maybe: exit %d, %q", code, stderr)
	}

	// The validating webhook: writing "newer" would contest size with
	// the three others of its rung; "elsewhere", for other clusters,
	// contests nothing.
	set := objects(t, docs...)
	v := &validator{objs: set, log: klog.Background(), objects: func(string) (*greenhouse.Set, error) { return set, nil }}
	newer := []byte(`{"apiVersion":"greenhouse.sap/v1alpha1","kind":"PluginOverride","metadata":{"name":"newer"},
		"spec":{"pluginDefinitionNames":["app"],"clusterSelector":{"labelSelector":{"matchLabels":{"env":"prod"}}},"overrides":[{"name":"size","value":4}]}}`)
	lines := v.contests(context.Background(), "org", newer)
	if len(lines) != 3 || !strings.HasPrefix(lines[0], `Plugin org/p-c1: option "size" is contested: PluginOverride org/newer wins by creation time, then name, over PluginOverride org/agrees, as specific, which gives 3`) {
		t.Errorf("warnings %q", lines)
	}
	elsewhere := []byte(strings.Replace(string(newer), `"env":"prod"`, `"env":"qa"`, 1))
	if lines := v.contests(context.Background(), "org", elsewhere); len(lines) != 0 {
		t.Errorf("an override for other clusters: warnings %q", lines)
	}

	// Contests as errors: the override is refused, naming the contests;
	// as warnings, admitted with them.
	for _, asErrors := range []bool{false, true} {
		v.settings.ContestsAreErrors = asErrors
		review, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "1", Kind: metav1.GroupVersionKind{Group: "greenhouse.sap", Version: "v1alpha1", Kind: greenhouse.KindPluginOverride},
				Namespace: "org", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: newer}}})
		rec := httptest.NewRecorder()
		v.handler().ServeHTTP(rec, httptest.NewRequest("POST", "/validate", bytes.NewReader(review)))
		var got admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Response == nil {
			t.Fatalf("%v: %s", err, rec.Body.String())
		}
		r := got.Response
		switch {
		case asErrors && (r.Allowed || !strings.Contains(r.Result.Message, "contests are errors here")):
			t.Errorf("contests as errors: %+v", r)
		case !asErrors && (!r.Allowed || len(r.Warnings) != 3):
			t.Errorf("contests as warnings: %+v", r)
		}
	}
}

// describe is a contender's value as the test compares it.
func describe(c greenhouse.Contender) string {
	if c.ValueFrom != nil && c.ValueFrom.Secret != nil {
		return "secret " + c.ValueFrom.Secret.Name + "#" + c.ValueFrom.Secret.Key
	}
	var b bytes.Buffer
	if c.Value != nil && json.Compact(&b, *c.Value) == nil {
		return b.String()
	}
	return "?"
}

// TestContestedDeeperPath: an override's path inside an earlier one's,
// of the same rung, that changes what the earlier one set there contests
// it; one that sets what the earlier one left alone does not.
func TestContestedDeeperPath(t *testing.T) {
	for _, tc := range []struct {
		later string
		want  []string
	}{
		{"  - {name: resources, path: /limits/cpu, value: \"2\"}\n", []string{`PluginOverride org/outer spec.overrides[0] (resources) at /limits/cpu="1"`}},
		{"  - {name: resources, path: /limits/memory, value: 2Gi}\n", nil},
		{"  - {name: resources, path: /limits/cpu, value: \"1\"}\n", nil},
	} {
		dir := scenario(t, mapDefinition, cluster, mapPreset, presetPlugin,
			byCluster("outer", "2026-01-01T00:00:00Z", "  - {name: resources, path: /limits, value: {cpu: \"1\"}}\n"),
			byCluster("inner", "2026-01-02T00:00:00Z", tc.later))
		code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		_, res := values(t, out)
		var got []string
		for _, c := range res.Provenance["resources"].Contested {
			got = append(got, c.Source+"="+describe(c))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: contested %v, want %v", strings.TrimSpace(tc.later), got, tc.want)
		}
	}
}
