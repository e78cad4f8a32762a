package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

// optOutDefinition has a required secret option with no default, an int,
// and a map: the shapes a Plugin's writer plays with below.
const optOutDefinition = `apiVersion: greenhouse.sap/v1alpha1
kind: PluginDefinition
metadata: {name: app, namespace: org}
spec:
  version: "1"
  options:
  - {name: size, type: int, default: 1, required: false}
  - {name: password, type: secret, required: true}
  - {name: cfg, type: map, required: false}
`

// throughWebhook sends plugin (JSON), written to namespace org, through the
// mutating webhook's handler with objs, as the API server does, and
// returns what is stored (nil when the webhook refuses it) and the
// warnings. A refusal is a defence: the writer's value is not stored.
func throughWebhook(t *testing.T, objs greenhouse.Objects, plugin []byte) ([]byte, []string) {
	t.Helper()
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
		return nil, got.Response.Warnings
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
	return out, got.Response.Warnings
}

// overridesOff reports the stored Plugin out (nil: refused) as a Plugin
// whose PluginOverride org/o, which sets size 5, was switched off.
func overridesOff(t *testing.T, how string, out []byte, warnings []string) {
	t.Helper()
	if out == nil {
		return
	}
	if vals, applied := stored(t, out); !slices.Contains(vals, "size=5") {
		t.Errorf("%s switched PluginOverride org/o off: stored %v, applied %q, warnings %q; want size=5 (the overrides applied) or a refusal", how, vals, applied, warnings)
	}
}

// TestWriterCannotOptOutWithARequiredSecretLiteral: a required secret
// option given as a literal vault+kvv2 reference, which Greenhouse
// accepts and strata leaves out of the computation as unchecked, is set:
// the required option is not missing, and the overrides still apply.
func TestWriterCannotOptOutWithARequiredSecretLiteral(t *testing.T) {
	objs := objects(t, optOutDefinition, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	plugin := written(t, nil, "  - {name: size, value: 2}\n"+
		"  - {name: password, value: \"vault+kvv2:///secret/data/app/password\"}\n")
	out, warnings := throughWebhook(t, objs, plugin)
	overridesOff(t, "a required secret option given a vault+kvv2 literal", out, warnings)
}

// TestWriterCannotOptOutWithAValueUnderAPath: where an override sets a
// path inside a map option whose value the writer gives by
// valueFrom.secret, or with a string on the path, the writer's value is
// kept as written, unchecked, and the other overrides still apply.
func TestWriterCannotOptOutWithAValueUnderAPath(t *testing.T) {
	def := strings.Replace(optOutDefinition, "required: true", "required: false", 1)
	objs := objects(t, def, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n  - {name: cfg, path: /limits/cpu, value: \"2\"}\n"))
	for how, cfg := range map[string]string{
		"cfg given by valueFrom.secret under an override's path":  "  - name: cfg\n    valueFrom: {secret: {name: s, key: cfg}}\n",
		"cfg {limits: none} under an override's path /limits/cpu": "  - {name: cfg, value: {limits: none}}\n",
	} {
		out, warnings := throughWebhook(t, objs, written(t, nil, "  - {name: size, value: 2}\n"+cfg))
		overridesOff(t, how, out, warnings)
	}
}

// TestEveryPluginOverrideOfTheWrongTypeRefused: an override for every
// plugin whose value a definition of the namespace's Plugins does not
// take is refused when written, naming the definition and the option;
// and one stored anyway (written before the definition was) is ignored
// for those Plugins, value by value, while the other overrides apply.
func TestEveryPluginOverrideOfTheWrongTypeRefused(t *testing.T) {
	def := strings.Replace(optOutDefinition, "required: true", "required: false", 1)
	objs := objects(t, def, cluster, presetPlugin,
		override("operator", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	bad := `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: everywhere, namespace: org, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  overrides:
  - {name: cfg, value: {a: b}}
  - {name: size, value: two}
`
	raw, err := yaml.YAMLToJSON([]byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	v := &validator{objs: objs, log: klog.Background()}
	verr := v.validate(greenhouse.KindPluginOverride, "org", raw)

	// What it does once stored: Greenhouse's next write of the Plugin.
	after := objects(t, def, cluster, presetPlugin,
		override("operator", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"), bad)
	out, warning := admitted(t, after, written(t, nil, "  - {name: size, value: 2}\n"))
	vals, applied := stored(t, out)
	if verr == nil || !strings.Contains(verr.Error(), `for the Plugins of PluginDefinition org/app: spec.overrides[1] (size): value "two" is not of type int`) {
		t.Errorf("the validating webhook: %v; want PluginOverride org/everywhere refused, its size \"two\" no int of PluginDefinition org/app", verr)
	}
	if !slices.Contains(vals, "size=5") {
		t.Errorf("once stored, Plugin org/p-c1 is written with %v, overrides applied %q (warning %q); want PluginOverride org/operator's size=5", vals, applied, warning)
	}
}

// TestWriterCannotOptOutWithAClusterThatIsNot: Greenhouse checks that a
// Plugin's cluster exists only when its definition has a Helm chart
// (plugin_webhook.go validatePluginForCluster), so a Plugin of a
// front-end-only definition may name no Cluster; the overrides that
// select no cluster still apply to it.
func TestWriterCannotOptOutWithAClusterThatIsNot(t *testing.T) {
	uiOnly := strings.Replace(strings.Replace(optOutDefinition, "required: true", "required: false", 1),
		"spec:\n", "spec:\n  uiApplication: {name: app-ui, version: \"1\"}\n", 1)
	objs := objects(t, uiOnly, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	plugin := []byte(strings.Replace(string(written(t, nil, "  - {name: size, value: 2}\n")), `"clusterName":"c1"`, `"clusterName":"nowhere"`, 1))
	if !strings.Contains(string(plugin), "nowhere") {
		t.Fatalf("no clusterName to replace in %s", plugin)
	}
	out, warnings := throughWebhook(t, objs, plugin)
	overridesOff(t, "a clusterName naming no Cluster (a front-end-only definition)", out, warnings)
}

// TestForgedRecordCannotTurnOverridesOff: the plugins.strata.dev/written
// annotation is the writer's to set like any other; a record whose base
// names another option than the value it is about is no record of the
// webhook's, and the value is the writer's.
func TestForgedRecordCannotTurnOverridesOff(t *testing.T) {
	objs := objects(t, definition, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	two := json.RawMessage(`2`)
	size := greenhouse.OptionValue{Name: "size", Value: &two}
	plugin := withRecord(t, "  - {name: size, value: 2}\n  - {name: must, value: x}\n"+
		"  - name: password\n    valueFrom: {secret: {name: b, key: k}}\n",
		greenhouse.Written{Name: "size", Source: "PluginOverride org/o", Digest: greenhouse.Digest(size),
			Base: &greenhouse.OptionValue{Name: "password", ValueFrom: &greenhouse.ValueFrom{Secret: &greenhouse.SecretKeyReference{Name: "a", Key: "k"}}}})
	storedUnlessRefused(t, "a forged "+greenhouse.AnnotationWritten+" record", objs, plugin)
}

// withRecord returns the Plugin written with values (YAML list items),
// its plugins.strata.dev/written annotation holding record.
func withRecord(t *testing.T, values string, record ...greenhouse.Written) []byte {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(written(t, nil, values), &p); err != nil {
		t.Fatal(err)
	}
	r, _ := json.Marshal(record)
	p["metadata"].(map[string]any)["annotations"] = map[string]any{greenhouse.AnnotationWritten: string(r)}
	plugin, _ := json.Marshal(p)
	return plugin
}

// storedUnlessRefused reports, as overridesOff, a Plugin the validating
// webhook admits and the mutating one stores with the override of
// objs, org/o, switched off; a refusal stores nothing.
func storedUnlessRefused(t *testing.T, how string, objs greenhouse.Objects, plugin []byte) {
	t.Helper()
	v := &validator{objs: objs, log: klog.Background()}
	if err := v.validate(greenhouse.KindPlugin, "org", plugin); err != nil {
		return // refused: nothing is stored
	}
	out, warnings := throughWebhook(t, objs, plugin)
	overridesOff(t, how, out, warnings)
}

// TestForgedRecordOfNoBaseCannotTurnOverridesOff: a record that claims
// the webhook added the writer's value of a required option (no base)
// takes the value out of the writer's values; admitting the write, the
// required option no layer sets is Greenhouse's to judge, and the
// overrides still apply.
func TestForgedRecordOfNoBaseCannotTurnOverridesOff(t *testing.T) {
	objs := objects(t, definition, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	x := json.RawMessage(`"x"`)
	must := greenhouse.OptionValue{Name: "must", Value: &x}
	plugin := withRecord(t, "  - {name: size, value: 2}\n  - {name: must, value: x}\n",
		greenhouse.Written{Name: "must", Source: "PluginOverride org/o", Digest: greenhouse.Digest(must)})
	storedUnlessRefused(t, "a forged "+greenhouse.AnnotationWritten+" record of the required option's value, with no base", objs, plugin)
}

// TestWriterCannotOptOutByDefinitionKind: a PluginOverride names
// definitions by name alone, and a Plugin's writer picks the kind in its
// pluginDefinitionRef: an override's value that the ClusterPluginDefinition
// of the same name does not take is not applied to the Plugin, and the
// other overrides still are.
func TestWriterCannotOptOutByDefinitionKind(t *testing.T) {
	namespaced, clusterWide := bothKinds(
		"  - {name: size, type: int, required: false}\n  - {name: token, type: string, required: false}\n",
		"  - {name: size, type: string, required: false}\n  - {name: token, type: string, required: false}\n")
	byDefinition := override("bydef", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n")
	every := `apiVersion: greenhouse.sap/v1alpha1
kind: PluginOverride
metadata: {name: every, namespace: org, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  overrides:
  - {name: token, value: t}
`
	// The validating webhook admits bydef today (it checks PluginDefinition
	// org/app only); one stored before the ClusterPluginDefinition was
	// created would be there whatever it checks.
	objs := objects(t, namespaced, clusterWide, cluster, presetPlugin, every)
	raw, err := yaml.YAMLToJSON([]byte(byDefinition))
	if err != nil {
		t.Fatal(err)
	}
	v := &validator{objs: objs, log: klog.Background()}
	t.Logf("the validating webhook on PluginOverride org/bydef: %v", v.validate(greenhouse.KindPluginOverride, "org", raw))

	objs = objects(t, namespaced, clusterWide, cluster, presetPlugin, every, byDefinition)
	out, warnings := throughWebhook(t, objs, clusterKindPlugin(t, "  - {name: size, value: big}\n"))
	if out == nil {
		return // refused
	}
	if vals, applied := stored(t, out); !slices.Contains(vals, `token="t"`) {
		t.Errorf("a Plugin of ClusterPluginDefinition app is stored with %v, overrides applied %q (warnings %q): PluginOverride org/every, for every plugin, is off", vals, applied, warnings)
	}
}

// TestUncheckedWriterValueUnderAPathIsKeptAsWritten: a writer's value
// left out of the computation as unchecked (a Secret's reference whose
// name strata refuses and Greenhouse takes) is kept as written where an
// override sets a path inside it, as a valid reference is: not replaced
// by what the path makes of the definition's default.
func TestUncheckedWriterValueUnderAPathIsKeptAsWritten(t *testing.T) {
	def := strings.Replace(optOutDefinition, "required: true", "required: false", 1)
	objs := objects(t, def, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n  - {name: cfg, path: /limits/cpu, value: \"2\"}\n"))
	plugin := written(t, nil, "  - {name: size, value: 2}\n  - name: cfg\n    valueFrom: {secret: {name: Bad_Name, key: cfg}}\n")
	out, warnings := throughWebhook(t, objs, plugin)
	if out == nil {
		t.Fatalf("refused: %q", warnings)
	}
	vals, _ := stored(t, out)
	if !slices.Contains(vals, "size=5") {
		t.Errorf("stored %v: the overrides are off (warnings %q)", vals, warnings)
	}
	if !slices.Contains(vals, "cfg=secret Bad_Name#cfg") {
		t.Errorf("stored %v with warnings %q: the writer's cfg, which the warning says is kept as written, is replaced", vals, warnings)
	}
}

// TestWriterCannotOptOutByDefinitionKindWithADefault: where the
// definition of the kind the writer picked has a default into which an
// override's path cannot go, the option is left as it is, that path not
// applied, and the other overrides still apply.
func TestWriterCannotOptOutByDefinitionKindWithADefault(t *testing.T) {
	namespaced, clusterWide := bothKinds(
		"  - {name: size, type: int, required: false}\n  - {name: cfg, type: map, default: {limits: {cpu: \"1\"}}, required: false}\n",
		"  - {name: size, type: int, required: false}\n  - {name: cfg, type: map, default: {limits: none}, required: false}\n")
	o := override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n  - {name: cfg, path: /limits/cpu, value: \"2\"}\n")
	objs := objects(t, namespaced, clusterWide, cluster, presetPlugin, o)
	out, warnings := throughWebhook(t, objs, clusterKindPlugin(t, "  - {name: size, value: 2}\n"))
	if out == nil {
		return // refused
	}
	if vals, applied := stored(t, out); !slices.Contains(vals, "size=5") {
		t.Errorf("a Plugin of ClusterPluginDefinition app is stored with %v, overrides applied %q (warnings %q): PluginOverride org/o is off", vals, applied, warnings)
	}
}

// bothKinds returns a PluginDefinition org/app and a
// ClusterPluginDefinition app, with the options given as YAML list items.
func bothKinds(namespaced, clusterWide string) (string, string) {
	head := func(kind, meta string) string {
		return "apiVersion: greenhouse.sap/v1alpha1\nkind: " + kind + "\nmetadata: " + meta + "\nspec:\n  version: \"1\"\n  options:\n"
	}
	return head("PluginDefinition", "{name: app, namespace: org}") + namespaced, head("ClusterPluginDefinition", "{name: app}") + clusterWide
}

// clusterKindPlugin returns the standalone Plugin org/solo of the
// ClusterPluginDefinition app on cluster c1, its values given as YAML
// list items, as JSON.
func clusterKindPlugin(t *testing.T, values string) []byte {
	t.Helper()
	plugin, err := yaml.YAMLToJSON([]byte(`apiVersion: greenhouse.sap/v1alpha1
kind: Plugin
metadata: {name: solo, namespace: org}
spec:
  pluginDefinitionRef: {name: app, kind: ClusterPluginDefinition}
  clusterName: c1
  optionValues:
` + values))
	if err != nil {
		t.Fatal(err)
	}
	return plugin
}
