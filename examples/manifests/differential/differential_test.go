package differential

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	policyloader "k8s.io/kubernetes/pkg/admission/plugin/policy/manifest/loader"
	webhookloader "k8s.io/kubernetes/pkg/admission/plugin/webhook/manifest/loader"

	"github.com/stratacfg/strata/examples/manifests/admission"
	"github.com/stratacfg/strata/manifests"
)

// outcome is what a loader made of a directory: whether it accepted it,
// and the objects, "Kind/name" → the object as JSON, TypeMeta left out.
type outcome struct {
	err     error
	objects map[string]string
	hash    string // what kube-apiserver reports in last_config_info{hash}
}

func (o outcome) names() []string {
	out := make([]string, 0, len(o.objects))
	for k := range o.objects {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func record(t *testing.T, o *outcome, kind string, objs ...metav1.Object) {
	t.Helper()
	if o.objects == nil {
		o.objects = map[string]string{}
	}
	for _, obj := range objs {
		r := obj.(runtime.Object)
		r.GetObjectKind().SetGroupVersionKind(schemaless)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		key := kind + "/" + obj.GetName()
		if _, dup := o.objects[key]; dup {
			o.objects[key+" (again)"] = string(b)
			continue
		}
		o.objects[key] = string(b)
	}
}

// upstream loads dir with the loader kube-apiserver installs for plugin.
func upstream(t *testing.T, dir, plugin string) outcome {
	var o outcome
	switch plugin {
	case admission.ValidatingAdmissionPolicy:
		r, err := policyloader.LoadValidatingManifestsFromDirectory(dir)
		if o.err = err; err == nil {
			o.hash = r.Hash
			for _, p := range r.Policies {
				record(t, &o, "ValidatingAdmissionPolicy", p)
			}
			for _, b := range r.Bindings {
				record(t, &o, "ValidatingAdmissionPolicyBinding", b)
			}
		}
	case admission.MutatingAdmissionPolicy:
		r, err := policyloader.LoadMutatingManifestsFromDirectory(dir)
		if o.err = err; err == nil {
			o.hash = r.Hash
			for _, p := range r.Policies {
				record(t, &o, "MutatingAdmissionPolicy", p)
			}
			for _, b := range r.Bindings {
				record(t, &o, "MutatingAdmissionPolicyBinding", b)
			}
		}
	case admission.ValidatingAdmissionWebhook:
		r, err := webhookloader.LoadValidatingManifests(dir)
		if o.err = err; err == nil {
			o.hash = r.Hash
			for _, c := range r.Configurations {
				record(t, &o, "ValidatingWebhookConfiguration", c)
			}
		}
	case admission.MutatingAdmissionWebhook:
		r, err := webhookloader.LoadMutatingManifests(dir)
		if o.err = err; err == nil {
			o.hash = r.Hash
			for _, c := range r.Configurations {
				record(t, &o, "MutatingWebhookConfiguration", c)
			}
		}
	default:
		t.Fatalf("unknown plugin %q", plugin)
	}
	return o
}

// strata loads dir with examples/manifests' loader.
func strata(t *testing.T, dir, plugin string) outcome {
	var o outcome
	set, err := admission.Load(dir, plugin)
	if o.err = err; err == nil {
		o.hash = set.APIServerHash
		for _, m := range set.Objects {
			record(t, &o, m.Kind, m.Object.(metav1.Object))
		}
	}
	return o
}

// compare fails t when the two loaders decided differently on dir.
func compare(t *testing.T, dir, plugin string) (up, st outcome) {
	t.Helper()
	up, st = upstream(t, dir, plugin), strata(t, dir, plugin)
	switch {
	case (up.err == nil) != (st.err == nil):
		t.Errorf("kube-apiserver: %v; strata: %v\n(kube-apiserver objects %v, strata objects %v)", up.err, st.err, up.names(), st.names())
	case up.err == nil && !slices.Equal(up.names(), st.names()):
		t.Errorf("both accept, different objects:\nkube-apiserver %v\nstrata         %v", up.names(), st.names())
	case up.err == nil && up.hash != st.hash:
		t.Errorf("both accept, different hashes: kube-apiserver reports %q, strata %q", up.hash, st.hash)
	case up.err == nil:
		for k, v := range up.objects {
			if st.objects[k] != v {
				t.Errorf("%s differs:\nkube-apiserver %s\nstrata         %s", k, v, st.objects[k])
			}
		}
	}
	return up, st
}

// A file's content may be one of these, for entries that are not plain
// files.
const (
	emptyFile = "@empty"       // a file of zero bytes
	subdir    = "@dir"         // a directory (holding a manifest)
	linkTo    = "@link:"       // a symbolic link to what follows, relative to the directory
	dangling  = "@link:absent" // a symbolic link to nothing
)

// writeDir builds a directory from files, name → content.
func writeDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		var err error
		switch {
		case content == emptyFile:
			err = os.WriteFile(p, nil, 0o644)
		case content == subdir:
			if err = os.Mkdir(p, 0o755); err == nil {
				err = os.WriteFile(filepath.Join(p, "inner.yaml"), []byte(vap("inner")), 0o644)
			}
		case strings.HasPrefix(content, linkTo):
			err = os.Symlink(strings.TrimPrefix(content, linkTo), p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Manifests the cases combine. Names get the static suffix unless they
// have a dot already.

func static(name string) string {
	if strings.Contains(name, ".") {
		return name
	}
	return name + admission.StaticSuffix
}

func vap(name string, extra ...string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: %s
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  validations:
  - expression: "object.spec.containers.all(c, c.image != '')"
%s`, static(name), strings.Join(extra, "\n"))
}

func vapb(name, policy string, extra ...string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: %s
spec:
  policyName: %s
  validationActions: [Deny]
%s`, static(name), static(policy), strings.Join(extra, "\n"))
}

func mapolicy(name string, extra ...string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: %s
spec:
  reinvocationPolicy: Never
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{spec: Object.spec{serviceAccountName: "default"}}'
%s`, static(name), strings.Join(extra, "\n"))
}

func mapb(name, policy string, extra ...string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: %s
spec:
  policyName: %s
%s`, static(name), static(policy), strings.Join(extra, "\n"))
}

// webhooks is a webhook configuration of kind with one webhook per
// clientConfig given (as YAML flow text).
func webhooks(kind, name string, clientConfigs ...string) string {
	s := fmt.Sprintf("apiVersion: admissionregistration.k8s.io/v1\nkind: %s\nmetadata:\n  name: %s\nwebhooks:\n", kind, static(name))
	for i, cc := range clientConfigs {
		s += fmt.Sprintf(`- name: w%d.example.com
  clientConfig: %s
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["configmaps"]
  sideEffects: None
  admissionReviewVersions: ["v1"]
`, i, cc)
	}
	return s
}

const url = `{url: "https://hook.example.com/x", caBundle: dGVzdA==}`

func vwc(name string, ccs ...string) string {
	if len(ccs) == 0 {
		ccs = []string{url}
	}
	return webhooks("ValidatingWebhookConfiguration", name, ccs...)
}

func mwc(name string, ccs ...string) string {
	if len(ccs) == 0 {
		ccs = []string{url}
	}
	return webhooks("MutatingWebhookConfiguration", name, ccs...)
}

// list wraps documents (YAML mappings) in a List of apiVersion.
func list(apiVersion, kind string, docs ...string) string {
	items := make([]string, len(docs))
	for i, d := range docs {
		j, err := yamlToJSON(d)
		if err != nil {
			panic(err)
		}
		items[i] = j
	}
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"items":[%s]}`, apiVersion, kind, strings.Join(items, ","))
}

func docs(ds ...string) string { return strings.Join(ds, "---\n") }

// TestCompositeOrder: kube-apiserver sorts its static webhook
// configurations by name and calls static webhooks first, in that order
// (the order of their mutations); Composite lists them so, whatever order
// the files give.
func TestCompositeOrder(t *testing.T) {
	dir := writeDir(t, map[string]string{"10-first.yaml": mwc("zz-defaults"), "20-second.yaml": mwc("aa-override")})
	up, err := webhookloader.LoadMutatingManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range up.Configurations {
		want = append(want, c.Name)
	}
	set, err := admission.Load(dir, admission.MutatingAdmissionWebhook)
	if err != nil {
		t.Fatal(err)
	}
	c := &manifests.Composite{Static: func() *manifests.Set { return set }, ReservedSuffix: admission.StaticSuffix}
	objs, _ := c.List()
	var got []string
	for _, o := range objs {
		got = append(got, o.(metav1.Object).GetName())
	}
	if !slices.Equal(got, want) {
		t.Errorf("static mutating webhook configurations: kube-apiserver calls them in the order %v; Composite lists %v", want, got)
	}
}
