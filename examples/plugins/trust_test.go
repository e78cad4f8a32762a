package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
)

// TestWriterCannotOptOutOfOverrides: a Plugin's writer cannot turn the
// operator's PluginOverrides off by adding a value strata refuses and
// Greenhouse takes (a secret option's literal vault+kvv2 reference): the
// write is stored with the overrides applied.
func TestWriterCannotOptOutOfOverrides(t *testing.T) {
	objs := objects(t, definition, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	plugin := written(t, nil, "  - {name: size, value: 2}\n  - {name: must, value: x}\n"+
		"  - {name: password, value: \"vault+kvv2:///secret/data/app/password\"}\n")

	m := &mutator{objs: objs, log: klog.Background(), admitted: metrics.NewCounterVec(&metrics.CounterOpts{Name: "t"}, []string{"result"})}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Namespace: "org", Operation: admissionv1.Create,
			Kind:   metav1.GroupVersionKind{Group: "greenhouse.sap", Version: "v1alpha1", Kind: "Plugin"},
			Object: runtime.RawExtension{Raw: plugin}},
	}
	body, _ := json.Marshal(review)
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodPost, mutatePath, bytes.NewReader(body)))
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Response == nil {
		t.Fatalf("no review back: %v %s", err, rec.Body)
	}
	if !got.Response.Allowed {
		return // refused: the writer's value is not stored
	}
	out := plugin
	if len(got.Response.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(got.Response.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if out, err = p.Apply(plugin); err != nil {
			t.Fatal(err)
		}
	}
	vals, _ := stored(t, out)
	if !slices.Contains(vals, "size=5") {
		t.Errorf("the writer switched PluginOverride org/o off with one value Greenhouse accepts: stored %v (warnings %q), want size=5 or a refusal", vals, got.Response.Warnings)
	}
}

// TestDiffOverrideFileOfOneOverride: `plugins diff --override FILE` takes
// a file holding one PluginOverride; one holding two is an error naming
// the file, not its first with the second dropped.
func TestDiffOverrideFileOfOneOverride(t *testing.T) {
	dir := scenario(t, definition, cluster, presetHead+"    optionValues: [{name: must, value: x}]\n", presetPlugin)
	file := filepath.Join(t.TempDir(), "o.yaml")
	two := override("first", "2026-01-01T00:00:00Z", "  - {name: token, value: t1}\n") + "---\n" +
		override("second", "2026-01-01T00:00:00Z", "  - {name: size, value: 9}\n")
	if err := os.WriteFile(file, []byte(two), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"diff", "--override", file, "--from-dir", dir}, &stdout, &stderr)
	if code == 0 {
		t.Errorf("a file of two PluginOverrides: exit 0, stdout %s; want an error naming %s", stdout.String(), file)
	}
	if code != 0 && !strings.Contains(stderr.String(), file) {
		t.Errorf("exit %d, stderr %q: want the file named", code, stderr.String())
	}
}

// TestNamespacelessManifestStaysOutOfNamespaces: a PluginOverride
// manifest without metadata.namespace is refused, naming its file, not
// applied to the namespace that shares its name.
func TestNamespacelessManifestStaysOutOfNamespaces(t *testing.T) {
	namespaceless := `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: org, creationTimestamp: "2030-01-01T00:00:00Z"}
spec:
  pluginDefinitionNames: [app]
  overrides:
  - {name: token, value: from-nowhere}
`
	dir := scenario(t, definition, cluster, presetHead+"    optionValues: [{name: must, value: x}]\n", presetPlugin, namespaceless)
	code, out, stderr := runTemplate(t, "--from-dir", dir, "--plugin", "org/p-c1")
	if code != 0 {
		return // refused
	}
	got, res := values(t, out)
	if got["token"] == `"from-nowhere"` || slices.Contains(res.AppliedOverrides, "PluginOverride org") {
		t.Errorf("a PluginOverride in no namespace, named org, applies to namespace org: token = %s, applied %v (stderr %q)", got["token"], res.AppliedOverrides, stderr)
	}
}
