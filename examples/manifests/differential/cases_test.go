package differential

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/manifests/admission"
	"github.com/stratacfg/strata/internal/yamljson"
)

var schemaless = schema.GroupVersionKind{}

func yamlToJSON(doc string) (string, error) {
	j, err := yaml.YAMLToJSON([]byte(doc))
	return string(j), err
}

const (
	vapPlugin = admission.ValidatingAdmissionPolicy
	mapPlugin = admission.MutatingAdmissionPolicy
	vwhPlugin = admission.ValidatingAdmissionWebhook
	mwhPlugin = admission.MutatingAdmissionWebhook
)

// dirCase is one directory and the plugin that loads it. ok is the
// decision kube-apiserver's tests expect; both loaders must take it.
type dirCase struct {
	name   string
	plugin string
	files  map[string]string
	ok     bool
}

// cases are kube-apiserver's own test cases of its manifest loaders
// (k8s.io/apiserver pkg/admission/plugin/manifest, .../policy/manifest,
// .../webhook/manifest; k8s.io/kubernetes pkg/admission/plugin/policy and
// webhook manifest/loader), as directories, and the edges of what it
// reads.
var cases = []dirCase{
	// Files: which are read, and how they split.
	{"empty directory", vapPlugin, nil, true},
	{"yaml, yml and json, txt ignored", vapPlugin, map[string]string{
		"a.yaml": vap("a"), "b.json": list("v1", "List", vap("b")), "c.yml": vap("c"), "d.txt": "kind: D"}, true},
	{"multi-document file", vapPlugin, map[string]string{"multi.yaml": docs(vap("a"), vapb("b", "a"))}, true},
	{"order of files", vapPlugin, map[string]string{"02-second.yaml": vap("second"), "01-first.yaml": vap("first")}, true},
	{"subdirectory not read", vapPlugin, map[string]string{"a.yaml": vap("a"), "subdir": subdir, "sub.yaml": subdir}, true},
	{"empty file skipped", vapPlugin, map[string]string{"empty.yaml": emptyFile, "valid.yaml": vap("a")}, true},
	{"whitespace-only file", vapPlugin, map[string]string{"blank.yaml": "  \n\n \n", "valid.yaml": vap("a")}, true},
	{"leading, trailing and doubled separators", vapPlugin, map[string]string{"a.yaml": "---\n" + vap("a") + "---\n---\n" + vap("b") + "---\n"}, true},
	{"three separators and a blank line", vapPlugin, map[string]string{"a.yaml": vap("a") + "---\n---\n\n---\n" + vap("b")}, false}, // a "---" document is left, and is no object
	{"a comment-only document", vapPlugin, map[string]string{"a.yaml": "# licence header\n---\n" + vap("a")}, false},
	{"a comment-only file", vapPlugin, map[string]string{"a.yaml": "# nothing yet\n"}, false},
	{"hidden files are read", vapPlugin, map[string]string{".hidden.yaml": vap("hidden"), ".yaml": vap("dot")}, true},
	{"extensions in upper case", vapPlugin, map[string]string{"A.YAML": vap("a"), "b.Json": list("v1", "List", vap("b")), "c.YmL": vap("c")}, true},
	{"backup and temporary names", vapPlugin, map[string]string{"a.yaml~": "x: [", "a.yaml.tmp": "x: [", "a.yaml.bak": "x: [", "a.yaml": vap("a")}, true},
	{"an extension only Unicode folding makes .json", vapPlugin, map[string]string{"a.yaml": vap("a"), "notes.j\u017fon": "x: ["}, true},
	{"JSON that is no YAML, with * and &&", vapPlugin, map[string]string{"a.json": notYAML}, true}, // decoded as JSON, never parsed as YAML
	{"a regular file named ..data", vapPlugin, map[string]string{"..data": "x", "a.yaml": vap("a")}, true},
	{"a directory named ..data", vapPlugin, map[string]string{"..data": subdir, "a.yaml": vap("a")}, true},
	{"a link to a manifest", vapPlugin, map[string]string{"real.txt": vap("a"), "link.yaml": linkTo + "real.txt"}, true},
	{"a dangling README", vapPlugin, map[string]string{"README": dangling, "a.yaml": vap("a")}, true},
	{"a dangling manifest link", vapPlugin, map[string]string{"a.yaml": dangling}, false},
	{"a link to a directory with a manifest's name", vapPlugin, map[string]string{"sub": subdir, "sub.yaml": linkTo + "sub"}, false},
	{"CRLF line endings", vapPlugin, map[string]string{"a.yaml": crlf(docs(vap("a"), vapb("b", "a")))}, true},
	{"a bad separator", vapPlugin, map[string]string{"a.yaml": vap("a") + "---foo\n"}, false},
	{"an indented separator", vapPlugin, map[string]string{"a.yaml": vap("a") + "  ---\n"}, false},
	{"invalid YAML", vwhPlugin, map[string]string{"bad.yaml": "this is not valid: yaml: content"}, false},
	{"not an object", vapPlugin, map[string]string{"a.yaml": "- a\n- b\n"}, false},

	// Decoding.
	{"an unknown field", vapPlugin, map[string]string{"a.yaml": vap("a", "  bogus: 1")}, false},
	{"a mis-cased field", vapPlugin, map[string]string{"a.yaml": vap("a", "  Validations: []")}, false},
	{"a duplicate YAML key", vapPlugin, map[string]string{"a.yaml": vap("a", "kind: ValidatingAdmissionPolicy")}, false},
	{"a duplicate JSON field", vapPlugin, map[string]string{"a.json": `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"b.static.k8s.io"},"spec":{"policyName":"a.static.k8s.io","validationActions":["Deny"]}}`, "p.yaml": vap("a")}, false},
	{"no kind", vapPlugin, map[string]string{"a.yaml": "apiVersion: admissionregistration.k8s.io/v1\nmetadata: {name: a.static.k8s.io}\n"}, false},
	{"no apiVersion", vapPlugin, map[string]string{"a.yaml": "kind: ValidatingAdmissionPolicy\nmetadata: {name: a.static.k8s.io}\n"}, false},
	{"a ConfigMap", vapPlugin, map[string]string{"wrong.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-a-policy}\n"}, false},
	{"a Pod", vwhPlugin, map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"}, false},
	{"a Status", vapPlugin, map[string]string{"a.yaml": "apiVersion: v1\nkind: Status\n"}, false},
	{"v1beta1 is not taken", vapPlugin, map[string]string{"a.yaml": replaceVersion(vap("a"), "v1beta1")}, false},
	{"v1alpha1 is not taken", mapPlugin, map[string]string{"a.yaml": replaceVersion(mapolicy("a"), "v1alpha1")}, false},

	// Lists.
	{"v1 List", vapPlugin, map[string]string{"list.yaml": list("v1", "List", vap("v1list-policy"), vapb("v1list-binding", "v1list-policy"))}, true},
	{"a List of any apiVersion", vapPlugin, map[string]string{"list.json": list("example.com/v9", "List", vap("a"))}, true},
	{"a List in a List", vapPlugin, map[string]string{"list.json": list("v1", "List", list("v1", "List", vap("a")), vap("b"))}, true},
	{"a typed List in a List", vapPlugin, map[string]string{"list.json": list("v1", "List", list("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyList", vap("a"), vap("b")))}, true},
	{"an empty List", vapPlugin, map[string]string{"list.json": `{"apiVersion":"v1","kind":"List","items":[]}`}, true},
	{"a List without items", vapPlugin, map[string]string{"list.json": `{"apiVersion":"v1","kind":"List"}`}, true},
	{"a null List item", vapPlugin, map[string]string{"list.json": `{"apiVersion":"v1","kind":"List","items":[null]}`}, false},
	{"a ConfigMap in a List", vapPlugin, map[string]string{"list.json": list("v1", "List", vap("a"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")}, false},
	{"ValidatingAdmissionPolicyList", vapPlugin, map[string]string{"l.yaml": list("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyList", vap("a"), vap("b"))}, true},
	{"policy List and binding List", vapPlugin, map[string]string{"l.yaml": docs(list("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyList", vap("a"))+"\n", list("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBindingList", vapb("b", "a")))}, true},
	{"an item of a typed List without its suffix", vwhPlugin, map[string]string{"l.yaml": list("admissionregistration.k8s.io/v1", "ValidatingWebhookConfigurationList", vwc("ok"), vwc("missing-suffix.example"))}, false},
	{"MutatingAdmissionPolicyList", mapPlugin, map[string]string{"l.yaml": list("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyList", mapolicy("a"), mapolicy("b"))}, true},
	{"webhook List", vwhPlugin, map[string]string{"l.yaml": list("admissionregistration.k8s.io/v1", "ValidatingWebhookConfigurationList", vwc("a"), vwc("b"))}, true},
	{"validating and mutating webhooks in a List", vwhPlugin, map[string]string{"l.yaml": list("v1", "List", vwc("a"), mwc("b"))}, false},
	{"MutatingWebhookConfigurationList", mwhPlugin, map[string]string{"l.yaml": list("admissionregistration.k8s.io/v1", "MutatingWebhookConfigurationList", mwc("a"))}, true},

	// Names.
	{"no name", vapPlugin, map[string]string{"a.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nspec: {}\n"}, false},
	{"a name without the suffix", vapPlugin, map[string]string{"a.yaml": vap("no-suffix.example")}, false},
	{"a name the API refuses", vapPlugin, map[string]string{"a.yaml": vap("Upper.static.k8s.io")}, false},
	{"a generateName", vapPlugin, map[string]string{"a.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {generateName: gen-}\nspec:\n  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}\n  validations: [{expression: 'true'}]\n"}, false},
	{"a name twice across files", vapPlugin, map[string]string{"01-policy.yaml": vap("dup"), "02-policy.yaml": vap("dup")}, false},
	{"a name twice in a file", vwhPlugin, map[string]string{"a.yaml": docs(vwc("dup"), vwc("dup"))}, false},
	{"a policy and a binding of one name", vapPlugin, map[string]string{"a.yaml": docs(vap("same"), vapb("same", "same"))}, true},
	{"two webhook configurations in a file", vwhPlugin, map[string]string{"a.yaml": docs(vwc("one"), vwc("two"))}, true},

	// Policies.
	{"policy and binding", vapPlugin, map[string]string{"policy.yaml": vap("test-policy"), "binding.yaml": vapb("test-binding", "test-policy")}, true},
	{"a binding to a missing policy", vapPlugin, map[string]string{"b.yaml": vapb("orphan", "does-not-exist")}, false},
	{"a binding to a policy without the suffix", vapPlugin, map[string]string{"b.yaml": vapb("bad-ref", "some-policy-without-suffix.example"), "p.yaml": vap("some-policy-without-suffix.example")}, false},
	{"a policy with paramKind", vapPlugin, map[string]string{"p.yaml": vap("param-policy", "  paramKind: {apiVersion: v1, kind: ConfigMap}")}, false},
	{"a binding with paramRef", vapPlugin, map[string]string{"p.yaml": vap("ref-policy"), "b.yaml": vapb("ref-binding", "ref-policy", "  paramRef: {name: my-config, namespace: default, parameterNotFoundAction: Deny}")}, false},
	{"a binding with an incomplete paramRef", vapPlugin, map[string]string{"p.yaml": vap("ref-policy"), "b.yaml": vapb("ref-binding", "ref-policy", "  paramRef: {name: my-config, namespace: default}")}, false},
	{"a policy without validations", vapPlugin, map[string]string{"p.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: a.static.k8s.io}\nspec:\n  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}\n"}, false},
	{"a CEL expression that does not compile", vapPlugin, map[string]string{"p.yaml": replaceExpression(vap("a"), "object.spec.(")}, false},
	{"a binding without actions", vapPlugin, map[string]string{"p.yaml": vap("a"), "b.yaml": replaceLine(vapb("b", "a"), "  validationActions: [Deny]", "")}, false},
	{"a mutating policy and binding", mapPlugin, map[string]string{"a.yaml": docs(mapolicy("a"), mapb("b", "a"))}, true},
	{"a mutating policy without reinvocationPolicy", mapPlugin, map[string]string{"a.yaml": replaceLine(mapolicy("a"), "  reinvocationPolicy: Never", "")}, false},
	{"a mutating policy with paramKind", mapPlugin, map[string]string{"a.yaml": mapolicy("a", "  paramKind: {apiVersion: v1, kind: ConfigMap}")}, false},
	{"a mutating binding with paramRef", mapPlugin, map[string]string{"a.yaml": docs(mapolicy("with-param"), mapb("b", "with-param", "  paramRef: {name: some-configmap, parameterNotFoundAction: Deny}"))}, false},
	{"an orphan mutating binding", mapPlugin, map[string]string{"a.yaml": mapb("b", "gone")}, false},
	{"a validating policy for the mutating plugin", mapPlugin, map[string]string{"a.yaml": vap("a")}, false},
	{"a mutating policy for the validating plugin", vapPlugin, map[string]string{"a.yaml": mapolicy("a")}, false},

	// Webhooks.
	{"a webhook configuration", vwhPlugin, map[string]string{"a.yaml": vwc("test")}, true},
	{"two webhooks", vwhPlugin, map[string]string{"a.yaml": vwc("test", url, url)}, true},
	{"a JSON webhook configuration", vwhPlugin, map[string]string{"a.json": list("v1", "List", vwc("json"))}, true},
	{"a .yml webhook configuration", vwhPlugin, map[string]string{"a.yml": vwc("yml"), "readme.txt": "hello"}, true},
	{"a service reference", vwhPlugin, map[string]string{"a.yaml": vwc("svc", `{service: {name: svc, namespace: ns}}`)}, false},
	{"an empty clientConfig", vwhPlugin, map[string]string{"a.yaml": vwc("empty", `{}`)}, false},
	{"an http URL", vwhPlugin, map[string]string{"a.yaml": vwc("http", `{url: "http://hook.example.com/x"}`)}, false},
	{"no webhooks", vwhPlugin, map[string]string{"a.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: none.static.k8s.io}\n"}, true},
	{"validating and mutating files", vwhPlugin, map[string]string{"01-validating.yaml": vwc("v"), "02-mutating.yaml": mwc("m")}, false},
	{"a mutating webhook configuration", mwhPlugin, map[string]string{"a.yaml": mwc("test")}, true},
	{"a validating configuration for the mutating plugin", mwhPlugin, map[string]string{"a.yaml": vwc("test")}, false},
	{"webhook order", vwhPlugin, map[string]string{"03-c.yaml": vwc("03-config"), "01-a.yaml": vwc("01-config"), "02-b.yaml": vwc("02-config")}, true},
	{"a bad selector", vwhPlugin, map[string]string{"a.yaml": replaceLine(vwc("sel"), "  sideEffects: None", "  sideEffects: None\n  namespaceSelector: {matchExpressions: [{key: a, operator: InvalidOperator}]}")}, false},
}

// notYAML is a JSON policy whose "\/" escape (PHP's json_encode writes
// every slash so) YAML has not, with a "*" and a CEL "&&".
const notYAML = `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
 "metadata": {"name": "json.static.k8s.io"},
 "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["*"]}]},
  "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels", "message": "see https:\/\/example.com\/labels"}]}}`

func TestDifferential(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.plugin+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeDir(t, tc.files)
			up, _ := compare(t, dir, tc.plugin)
			if (up.err == nil) != tc.ok {
				t.Errorf("kube-apiserver decided %v, the case expects ok=%t: the case is wrong", up.err, tc.ok)
			}
		})
	}
}

// TestMountedDirectory loads the same manifests from a ConfigMap-style
// mount (kubelet's AtomicWriter layout): kube-apiserver reads the visible
// links, strata the generation behind ..data; they agree.
func TestMountedDirectory(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"..2026_11_23_00_00_00.000000001": "@dir",
		"..data":                          linkTo + "..2026_11_23_00_00_00.000000001",
		"inner.yaml":                      linkTo + "..data/inner.yaml",
	})
	up, st := compare(t, dir, vapPlugin)
	if up.err != nil || len(st.objects) != 1 {
		t.Fatalf("kube-apiserver %v %v; strata %v %v", up.err, up.names(), st.err, st.names())
	}
}

// TestMountedDirectoryNamedAsAManifest: in a ConfigMap-style mount whose
// payload puts a file under x.yaml/ (an item path), the generation holds
// a directory x.yaml and the mount shows a link x.yaml -> ..data/x.yaml.
// kube-apiserver reads the link and refuses the set; so does strata,
// which reads the generation.
func TestMountedDirectoryNamedAsAManifest(t *testing.T) {
	dir := t.TempDir()
	gen := "..2026_11_23_00_00_00.000000001"
	for name, content := range map[string]string{"a.yaml": vap("a"), "x.yaml/b.yaml": vap("b")} {
		p := filepath.Join(dir, gen, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"..data": gen, "a.yaml": "..data/a.yaml", "x.yaml": "..data/x.yaml"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	up, st := compare(t, dir, vapPlugin)
	if up.err == nil || st.err == nil {
		t.Fatalf("kube-apiserver %v %v; strata %v %v; want both to refuse the link to a directory", up.err, up.names(), st.err, st.names())
	}
}

// FuzzDirectories loads directories of three files whose contents the
// fuzzer writes, seeded with every case above, for each plugin: both
// loaders take the same decision and the same objects.
func FuzzDirectories(f *testing.F) {
	plugins := []string{vapPlugin, mapPlugin, vwhPlugin, mwhPlugin}
	for _, tc := range cases {
		var contents []string
		for _, c := range tc.files {
			if c != subdir && c != emptyFile && !isLink(c) {
				contents = append(contents, c)
			}
		}
		for len(contents) < 3 {
			contents = append(contents, "")
		}
		f.Add(uint8(indexOf(plugins, tc.plugin)), contents[0], contents[1], contents[2])
	}
	f.Fuzz(func(t *testing.T, plugin uint8, a, b, c string) {
		if len(a)+len(b)+len(c) > 1<<20 {
			return
		}
		for _, content := range []string{a, b, c} {
			if yamljson.Check([]byte(content), yamljson.Limit(len(content))) != nil {
				return // an alias bomb: strata refuses it, kube-apiserver expands it (docs/MANIFESTS.md)
			}
		}
		dir := t.TempDir()
		for name, content := range map[string]string{"a.yaml": a, "b.json": b, ".c.YML": c} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		compare(t, dir, plugins[int(plugin)%len(plugins)])
	})
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

func replaceVersion(doc, version string) string {
	return strings.Replace(doc, "admissionregistration.k8s.io/v1\n", "admissionregistration.k8s.io/"+version+"\n", 1)
}

func replaceExpression(doc, expr string) string {
	return replaceLine(doc, `  - expression: "object.spec.containers.all(c, c.image != '')"`, "  - expression: "+strconv.Quote(expr))
}

// replaceLine replaces the line old of doc, which must be there.
func replaceLine(doc, old, new string) string {
	if !strings.Contains(doc, old+"\n") {
		panic("no line " + old)
	}
	return strings.Replace(doc, old+"\n", new+"\n", 1)
}

func isLink(content string) bool { return strings.HasPrefix(content, linkTo) }

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return 0
}
