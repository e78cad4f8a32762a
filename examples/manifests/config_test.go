package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/stratacfg/strata/examples/manifests/admission"
	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/watchtest"
)

// writeAdmissionConfig copies each plugin's shipped directory under root
// and writes an AdmissionConfiguration naming them, two plugins'
// configurations inline and two by a path relative to the file, as an
// operator writes one for kube-apiserver. It returns the file.
func writeAdmissionConfig(t *testing.T, root string) string {
	t.Helper()
	dirs := map[string]string{}
	for _, plugin := range admission.Plugins {
		dirs[plugin] = filepath.Join(root, strings.ToLower(plugin))
		if err := os.MkdirAll(dirs[plugin], 0o755); err != nil {
			t.Fatal(err)
		}
		watchtest.WriteFiles(t, dirs[plugin], testdata(t, plugin))
	}
	watchtest.WriteFiles(t, root, map[string]string{
		"map.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: MutatingAdmissionPolicyConfiguration\nstaticManifestsDir: " + dirs[admission.MutatingAdmissionPolicy] + "\n",
		"mwh.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nstaticManifestsDir: " + dirs[admission.MutatingAdmissionWebhook] + "\n",
		"admission.yaml": `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionPolicy
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ValidatingAdmissionPolicyConfiguration
    staticManifestsDir: ` + dirs[admission.ValidatingAdmissionPolicy] + `
- name: MutatingAdmissionPolicy
  path: map.yaml
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    staticManifestsDir: ` + dirs[admission.ValidatingAdmissionWebhook] + `
- name: MutatingAdmissionWebhook
  path: mwh.yaml
`,
	})
	return filepath.Join(root, "admission.yaml")
}

// onceLines runs --once with args and returns its exit code and lines.
func onceLines(t *testing.T, args ...string) (int, []line, string) {
	t.Helper()
	out := newLines()
	var stderr strings.Builder
	code := run(t.Context(), append(args, "--once"), out, &stderr)
	var ls []line
	for {
		select {
		case l := <-out.ch:
			ls = append(ls, l)
			continue
		default:
		}
		return code, ls, stderr.String()
	}
}

// TestAdmissionConfigIsKubeAPIServers checks that the file kube-apiserver
// reads is the file strata checks: kube-apiserver v1.37.2, started with
// an AdmissionConfiguration, reports for each plugin the hash that
// `manifests --admission-config` prints for it.
func TestAdmissionConfigIsKubeAPIServers(t *testing.T) {
	config := writeAdmissionConfig(t, t.TempDir())
	code, ls, stderr := onceLines(t, "--admission-config", config)
	if code != 0 {
		t.Fatalf("exit %d, lines %+v, stderr %q", code, ls, stderr)
	}
	ours := map[string]string{}
	for _, l := range ls {
		if l.Status != "success" || l.Dir == "" || l.APIServerHash == "" || len(l.Objects) == 0 {
			t.Errorf("line %+v", l)
		}
		ours[l.Plugin] = l.APIServerHash
	}
	if len(ours) != len(admission.Plugins) {
		t.Fatalf("lines for %v, want one for each of %v", ours, admission.Plugins)
	}

	srv := kubetest.Start(t, "--admission-control-config-file="+config)
	client := srv.Client(t)
	theirs := map[string]string{}
	info := regexp.MustCompile(`^apiserver_manifest_admission_config_controller_last_config_info\{(.*)\} 1$`)
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	watchtest.Eventually(t, 30*time.Second, func() string {
		raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
		if err != nil {
			return "reading kube-apiserver's /metrics: " + err.Error()
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			m := info.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			labels := map[string]string{}
			for _, kv := range label.FindAllStringSubmatch(m[1], -1) {
				labels[kv[1]] = kv[2]
			}
			theirs[labels["plugin"]] = labels["hash"]
		}
		if len(theirs) != len(admission.Plugins) {
			return fmt.Sprintf("kube-apiserver reports last_config_info for %v only", theirs)
		}
		return ""
	})
	for plugin, h := range ours {
		if theirs[plugin] != h {
			t.Errorf("%s: manifests prints apiserverHash %s, kube-apiserver reports %s", plugin, h, theirs[plugin])
		}
	}
}

// TestAdmissionConfigProblems checks the problems across plugins: a
// directory two plugins share, a plugin configured twice, a name two
// plugins' sets use; and that a configuration that cannot be read is an
// error naming the file and the plugin.
func TestAdmissionConfigProblems(t *testing.T) {
	root := t.TempDir()
	vap := filepath.Join(root, "vap")
	vwh := filepath.Join(root, "vwh")
	for dir, plugin := range map[string]string{vap: admission.ValidatingAdmissionPolicy, vwh: admission.ValidatingAdmissionWebhook} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		watchtest.WriteFiles(t, dir, testdata(t, plugin))
	}
	// The webhook configuration takes the name of one of the policies.
	webhooks := testdata(t, admission.ValidatingAdmissionWebhook)["10-audit.yaml"]
	name := regexp.MustCompile(`name: (\S+\.static\.k8s\.io)`).FindStringSubmatch(webhooks)[1]
	policies := testdata(t, admission.ValidatingAdmissionPolicy)
	var policy string
	for _, f := range slices.Sorted(func(yield func(string) bool) {
		for k := range policies {
			if !yield(k) {
				return
			}
		}
	}) {
		if m := regexp.MustCompile(`"?name"?: "?([a-z0-9.-]+\.static\.k8s\.io)`).FindStringSubmatch(policies[f]); m != nil {
			policy = m[1]
			break
		}
	}
	watchtest.WriteFiles(t, vwh, map[string]string{"10-audit.yaml": strings.ReplaceAll(webhooks, name, policy)})
	inline := func(kind, dir string) string {
		return "  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: " + kind + "\n    staticManifestsDir: " + dir + "\n"
	}
	watchtest.WriteFiles(t, root, map[string]string{
		"conflict.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
			"- name: ValidatingAdmissionPolicy\n" + inline("ValidatingAdmissionPolicyConfiguration", vap) +
			"- name: ValidatingAdmissionWebhook\n" + inline("WebhookAdmissionConfiguration", vwh) +
			"- name: ValidatingAdmissionWebhook\n" + inline("WebhookAdmissionConfiguration", vap),
		"shared.yaml": "apiVersion: apiserver.k8s.io/v1alpha1\nkind: AdmissionConfiguration\nplugins:\n" +
			"- name: ValidatingAdmissionPolicy\n" + inline("ValidatingAdmissionPolicyConfiguration", vap) +
			"- name: MutatingAdmissionPolicy\n" + inline("MutatingAdmissionPolicyConfiguration", vap),
		"missing.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
			"- name: MutatingAdmissionWebhook\n  path: nowhere.yaml\n",
		"relative.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
			"- name: ValidatingAdmissionPolicy\n" + inline("ValidatingAdmissionPolicyConfiguration", "vap"),
	})

	code, ls, _ := onceLines(t, "--admission-config", filepath.Join(root, "conflict.yaml"))
	var problems []string
	for _, l := range ls {
		if l.Status == "problem" {
			problems = append(problems, l.Error)
		} else if l.Status != "success" {
			t.Errorf("line %+v: each plugin's set loads", l)
		}
	}
	if code != 1 || len(problems) != 2 || !strings.Contains(problems[0], "ValidatingAdmissionWebhook is configured twice") ||
		!strings.Contains(problems[1], "name "+policy+" is used by the sets of ValidatingAdmissionPolicy and ValidatingAdmissionWebhook") {
		t.Errorf("conflict.yaml: exit %d, problems %q", code, problems)
	}

	code, ls, _ = onceLines(t, "--admission-config", filepath.Join(root, "shared.yaml"))
	if code != 1 || len(ls) != 3 || ls[0].Status != "problem" || !strings.Contains(ls[0].Error, "directory "+vap+" is the staticManifestsDir of ValidatingAdmissionPolicy and MutatingAdmissionPolicy") ||
		ls[1].Status != "success" || ls[2].Status != "failure" || ls[2].Plugin != admission.MutatingAdmissionPolicy {
		t.Errorf("shared.yaml: exit %d, lines %+v", code, ls)
	}

	for file, want := range map[string]string{
		"missing.yaml":  "plugin MutatingAdmissionWebhook: its configuration cannot be read",
		"relative.yaml": "must be an absolute file path",
	} {
		code, ls, stderr := onceLines(t, "--admission-config", filepath.Join(root, file))
		if code != 1 || len(ls) != 0 || !strings.Contains(stderr, filepath.Join(root, file)) || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, lines %+v, stderr %q; want 1 and %q", file, code, ls, stderr, want)
		}
	}
	for _, args := range [][]string{
		{"--admission-config", filepath.Join(root, "conflict.yaml"), "--dir", vap},
		{"--admission-config", filepath.Join(root, "conflict.yaml"), "--plugin", admission.ValidatingAdmissionPolicy},
		{"--emit-guard", "--once"},
		{"--emit-guard", "--poll-interval", "1s"},
	} {
		var stdout, stderr strings.Builder
		if code := run(t.Context(), args, &stdout, &stderr); code != 2 || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", args, code, stdout.String())
		}
	}
}

// TestAdmissionConfigLive follows every plugin's directory at once, and
// reports a name conflict when a reload brings one in.
func TestAdmissionConfigLive(t *testing.T) {
	root := t.TempDir()
	config := writeAdmissionConfig(t, root)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := newLines()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--admission-config", config, "--poll-interval", "1s"}, out, &strings.Builder{})
	}()
	seen := map[string]bool{}
	for range admission.Plugins {
		l := out.next(t)
		if l.Status != "success" {
			t.Fatalf("first load %+v", l)
		}
		seen[l.Plugin] = true
	}
	if len(seen) != len(admission.Plugins) {
		t.Fatalf("first loads of %v", seen)
	}
	mwh := filepath.Join(root, strings.ToLower(admission.MutatingAdmissionWebhook))
	inject := testdata(t, admission.MutatingAdmissionWebhook)["10-inject.yaml"]
	name := regexp.MustCompile(`name: (\S+\.static\.k8s\.io)`).FindStringSubmatch(inject)[1]
	watchtest.WriteFiles(t, mwh, map[string]string{"10-inject.yaml": strings.ReplaceAll(inject, name, "shared.static.k8s.io")})
	vwh := filepath.Join(root, strings.ToLower(admission.ValidatingAdmissionWebhook))
	audit := testdata(t, admission.ValidatingAdmissionWebhook)["10-audit.yaml"]
	name = regexp.MustCompile(`name: (\S+\.static\.k8s\.io)`).FindStringSubmatch(audit)[1]
	watchtest.WriteFiles(t, vwh, map[string]string{"10-audit.yaml": strings.ReplaceAll(audit, name, "shared.static.k8s.io")})
	for {
		l := out.next(t)
		if l.Status == "failure" {
			t.Fatalf("reload %+v", l)
		}
		if l.Status == "problem" {
			if !strings.Contains(l.Error, "name shared.static.k8s.io is used by the sets of ValidatingAdmissionWebhook and MutatingAdmissionWebhook") {
				t.Fatalf("problem %q", l.Error)
			}
			break
		}
	}
	// A reload that keeps the conflict does not print it again.
	watchtest.WriteFiles(t, mwh, map[string]string{"10-inject.yaml": strings.ReplaceAll(inject, name, "shared.static.k8s.io") + "# touched\n"})
	if l := out.next(t); l.Status != "success" || l.Plugin != admission.MutatingAdmissionWebhook {
		t.Fatalf("reload %+v", l)
	}
	out.quiet(t, 300*time.Millisecond)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestEmitGuard applies the guard to a real kube-apiserver with
// manifest-based admission off, as on a cluster before 1.36: without it
// such a cluster creates objects named *.static.k8s.io; with it, both
// webhook configuration kinds are denied under such a name and pass under
// another, while the admission policies and their bindings, which
// kube-apiserver exempts from every API-defined policy, are not guarded
// (the guard says so, and gives the command that lists them).
func TestEmitGuard(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run(t.Context(), []string{"--emit-guard"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `for r in validatingadmissionpolicies validatingadmissionpolicybindings mutatingadmissionpolicies mutatingadmissionpolicybindings; do kubectl get "$r" -o name 2>/dev/null; done | grep '\.static\.k8s\.io$'`) {
		t.Errorf("the guard does not say how to find the policies it cannot guard:\n%s", stdout.String())
	}
	srv := kubetest.Start(t, "--feature-gates=ManifestBasedAdmissionControlConfig=false")
	client := srv.Client(t)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// One created for real, which the guard's command finds.
	if err := creators(client)["ValidatingAdmissionPolicyBinding"](t.Context(), "early"+admission.StaticSuffix, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list := regexp.MustCompile(`(?m)^#   (for r in .*)$`).FindStringSubmatch(stdout.String())
	if list == nil {
		t.Fatalf("no command in the guard's comment:\n%s", stdout.String())
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-c", list[1])
	cmd.Env = append(os.Environ(), "KUBECONFIG="+srv.Kubeconfig)
	found, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(found)) != "validatingadmissionpolicybinding.admissionregistration.k8s.io/early"+admission.StaticSuffix {
		t.Errorf("the guard's command printed %q (%v), want the one binding under a reserved name", found, err)
	}
	if err := createAll(t.Context(), client, "before"+admission.StaticSuffix, dry); err != nil {
		t.Fatalf("without the guard, a cluster with manifest-based admission off takes the reserved names: %v", err)
	}

	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stdout.String()), 4096)
	var applied []string
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			break
		}
		obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		if err != nil {
			t.Fatalf("the guard does not decode: %v", err)
		}
		switch o := obj.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			_, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(t.Context(), o, metav1.CreateOptions{})
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			_, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(t.Context(), o, metav1.CreateOptions{})
		default:
			t.Fatalf("the guard holds a %T", obj)
		}
		if err != nil {
			t.Fatalf("applying the guard: %v", err)
		}
		applied = append(applied, fmt.Sprintf("%T", obj))
	}
	if len(applied) != 2 {
		t.Fatalf("the guard is %v, want a policy and its binding", applied)
	}

	create := creators(client)
	guarded := []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
	watchtest.Eventually(t, 30*time.Second, func() string {
		if err := create[guarded[0]](t.Context(), "after"+admission.StaticSuffix, dry); !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			return fmt.Sprintf("the guard in effect: creating under a reserved name gives %v", err)
		}
		return ""
	})
	for kind, create := range create {
		err := create(t.Context(), "after"+admission.StaticSuffix, dry)
		denied := err != nil && strings.Contains(err.Error(), "reserved for manifest-based admission configuration (KEP-5793)")
		if want := slices.Contains(guarded, kind); denied != want {
			t.Errorf("%s named after%s: %v; denied %v, want %v", kind, admission.StaticSuffix, err, denied, want)
		}
		if err := create(t.Context(), "after.example.com", dry); err != nil {
			t.Errorf("%s named after.example.com: %v, want it created", kind, err)
		}
	}
}

// createAll creates one object of each kind named name, and returns the
// errors.
func createAll(ctx context.Context, client kubernetes.Interface, name string, o metav1.CreateOptions) error {
	var errs []error
	for kind, create := range creators(client) {
		if err := create(ctx, name, o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", kind, err))
		}
	}
	return errors.Join(errs...)
}

// creators create one valid object of each kind a static manifest
// directory holds.
func creators(client kubernetes.Interface) map[string]func(ctx context.Context, name string, o metav1.CreateOptions) error {
	a := client.AdmissionregistrationV1()
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	url := "https://webhook.example.com/check"
	rules := []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
		Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
	constraints := &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: rules[0]}}}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	return map[string]func(context.Context, string, metav1.CreateOptions) error{
		"ValidatingAdmissionPolicy": func(ctx context.Context, name string, o metav1.CreateOptions) error {
			_, err := a.ValidatingAdmissionPolicies().Create(ctx, &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: meta(name),
				Spec: admissionv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail, MatchConstraints: constraints,
					Validations: []admissionv1.Validation{{Expression: "true"}}}}, o)
			return err
		},
		"ValidatingAdmissionPolicyBinding": func(ctx context.Context, name string, o metav1.CreateOptions) error {
			_, err := a.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: meta(name),
				Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}, o)
			return err
		},
		"MutatingAdmissionPolicy": func(ctx context.Context, name string, o metav1.CreateOptions) error {
			_, err := a.MutatingAdmissionPolicies().Create(ctx, &admissionv1.MutatingAdmissionPolicy{ObjectMeta: meta(name),
				Spec: admissionv1.MutatingAdmissionPolicySpec{FailurePolicy: &fail, MatchConstraints: constraints,
					ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
					Mutations: []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeApplyConfiguration,
						ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: "Object{}"}}}}}, o)
			return err
		},
		"MutatingAdmissionPolicyBinding": func(ctx context.Context, name string, o metav1.CreateOptions) error {
			_, err := a.MutatingAdmissionPolicyBindings().Create(ctx, &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: meta(name),
				Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "p"}}, o)
			return err
		},
		"ValidatingWebhookConfiguration": func(ctx context.Context, name string, o metav1.CreateOptions) error {
			_, err := a.ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: meta(name),
				Webhooks: []admissionv1.ValidatingWebhook{{Name: "check.example.com", ClientConfig: admissionv1.WebhookClientConfig{URL: &url},
					Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}, o)
			return err
		},
		"MutatingWebhookConfiguration": func(ctx context.Context, name string, o metav1.CreateOptions) error {
			_, err := a.MutatingWebhookConfigurations().Create(ctx, &admissionv1.MutatingWebhookConfiguration{ObjectMeta: meta(name),
				Webhooks: []admissionv1.MutatingWebhook{{Name: "check.example.com", ClientConfig: admissionv1.WebhookClientConfig{URL: &url},
					Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}, o)
			return err
		},
	}
}
