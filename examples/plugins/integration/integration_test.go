// Package integration runs the plugins command against the real
// kube-apiserver and etcd that `make tools` builds: the CRDs of
// config/crd installed, the testdata's objects created, `plugins template
// --kubeconfig` and `plugins run` driven as a user drives them.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/servingcert"
	"github.com/stratacfg/strata/internal/watchtest"
)

var (
	server *kubetest.Server
	bin    string // the plugins command, built once
)

func TestMain(m *testing.M) { os.Exit(kubetest.MainWithCommand(m, &server, "..", "plugins", &bin)) }

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// setUp installs the CRDs, once, and creates namespace ns.
func setUp(t *testing.T, c dynamic.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	files, err := filepath.Glob("../config/crd/*.yaml")
	if err != nil || len(files) != 6 {
		t.Fatalf("CRDs: %v, %v", files, err)
	}
	for _, f := range files {
		for _, obj := range manifests(t, f) {
			if _, err := c.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: %v", f, err)
			}
			waitFor(t, "CRD "+obj.GetName()+" established", func() bool {
				u, err := c.Resource(crdGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
				if err != nil {
					return false
				}
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				for _, cond := range conds {
					m := cond.(map[string]any)
					if m["type"] == "Established" && m["status"] == "True" {
						return true
					}
				}
				return false
			})
		}
	}
	if _, err := server.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// manifests decodes every document of a YAML file.
func manifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		raw, err := docs.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, u)
	}
}

// create creates the testdata's objects in namespace ns, in file order.
func create(t *testing.T, c dynamic.Interface, ns string) {
	t.Helper()
	for _, f := range []string{"definitions", "clusters", "presets", "plugins", "overrides"} {
		for _, u := range manifests(t, filepath.Join("..", "testdata", "greenhouse", f+".yaml")) {
			apply(t, c, ns, u)
		}
	}
}

// apply creates u in ns (or as a cluster-scoped object), creationTimestamp
// left to the server.
func apply(t *testing.T, c dynamic.Interface, ns string, u *unstructured.Unstructured) error {
	t.Helper()
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	gvr := greenhouse.Resources[u.GetKind()]
	var err error
	if u.GetKind() == greenhouse.KindClusterPluginDefinition {
		_, err = c.Resource(gvr).Create(context.Background(), u, metav1.CreateOptions{})
	} else {
		u.SetNamespace(ns)
		_, err = c.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return err
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !watchtest.Until(30*time.Second, cond) {
		t.Fatalf("%s: not within 30s", what)
	}
}

// template runs `plugins template --kubeconfig` for ns/name.
func template(t *testing.T, ns, name string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, "template", "--kubeconfig", server.Kubeconfig, "--plugin", ns+"/"+name)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// TestTemplateAgainstTheCluster reads the testdata from the API server:
// the same result as from the directory, nothing of a Secret read, and
// the same blast radius of an override.
func TestTemplateAgainstTheCluster(t *testing.T) {
	c := dynamic.NewForConfigOrDie(server.Config)
	setUp(t, c, "demo")
	create(t, c, "demo")
	for _, p := range []string{"monitoring-eu-de-1", "monitoring-eu-de-2", "cert-manager-us"} {
		code, fromCluster, stderr := template(t, "demo", p)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", p, code, stderr)
		}
		out, err := exec.Command(bin, "template", "--from-dir", "../testdata/greenhouse", "--plugin", "demo/"+p).Output()
		if err != nil {
			t.Fatal(err)
		}
		if fromCluster != string(out) {
			t.Errorf("%s: the cluster and the directory disagree:\ncluster\n%s\ndirectory\n%s", p, fromCluster, out)
		}
	}
	if code, out, stderr := template(t, "demo", "nope"); code != 1 || out != "" || !strings.Contains(stderr, "Plugin demo/nope: not found") {
		t.Errorf("a missing Plugin: %d %q %q", code, out, stderr)
	}

	// The blast radius of an override reads the same from the API server
	// as from the directory.
	override := filepath.Join(t.TempDir(), "prod-debug.yaml")
	if err := os.WriteFile(override, []byte("apiVersion: greenhouse.sap/v1alpha1\nkind: PluginOverride\nmetadata:\n  name: prod-debug\n  namespace: demo\n"+
		"  creationTimestamp: \"2026-03-01T00:00:00Z\"\nspec:\n  clusterSelector:\n    labelSelector:\n      matchLabels: {tier: prod}\n"+
		"  overrides:\n  - {name: logLevel, value: debug}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromCluster, err := exec.Command(bin, "diff", "--override", override, "--kubeconfig", server.Kubeconfig).Output()
	if err != nil {
		t.Fatal(err)
	}
	fromDir, err := exec.Command(bin, "diff", "--override", override, "--from-dir", "../testdata/greenhouse").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(fromCluster) != string(fromDir) || !strings.Contains(string(fromCluster), `"afterSource": "PluginOverride demo/prod-debug"`) {
		t.Errorf("the cluster and the directory disagree:\ncluster\n%s\ndirectory\n%s", fromCluster, fromDir)
	}

	// A preset whose values come from an expression and from another
	// preset's, by valueFrom.ref: the API server keeps both fields, and
	// the cluster and the directory agree.
	dir := t.TempDir()
	for _, f := range []string{"definitions", "clusters", "presets", "plugins", "overrides"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "greenhouse", f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f+".yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	extra := `apiVersion: greenhouse.sap/v1alpha1
kind: PluginPreset
metadata: {name: derived, namespace: demo, labels: {greenhouse.sap/owned-by: team-a}}
spec:
  clusterSelector: {matchLabels: {region: eu}}
  plugin:
    pluginDefinitionRef: {name: kube-monitoring, kind: PluginDefinition}
    optionValues:
    - {name: alerts.webhook, valueFrom: {secret: {name: alerting, key: webhook-url}}}
    - {name: extraLabels, expression: '{team: "${global.greenhouse.ownedBy}", cluster: "${global.greenhouse.clusterName}"}'}
    - name: replicas
      valueFrom: {ref: {name: monitoring, expression: 'int(object.spec.plugin.optionValues.filter(v, v.name == "replicas")[0].value) + 10'}}
---
apiVersion: greenhouse.sap/v1alpha1
kind: Plugin
metadata: {name: derived-eu-de-1, namespace: demo, labels: {greenhouse.sap/pluginpreset: derived}}
spec:
  pluginDefinitionRef: {name: kube-monitoring, kind: PluginDefinition}
  clusterName: eu-de-1
`
	if err := os.WriteFile(filepath.Join(dir, "derived.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range manifests(t, filepath.Join(dir, "derived.yaml")) {
		apply(t, c, "demo", u)
	}
	code, derivedCluster, stderr := template(t, "demo", "derived-eu-de-1")
	if code != 0 {
		t.Fatalf("derived-eu-de-1: exit %d: %s", code, stderr)
	}
	derivedDir, err := exec.Command(bin, "template", "--from-dir", dir, "--plugin", "demo/derived-eu-de-1").Output()
	if err != nil {
		t.Fatal(err)
	}
	if derivedCluster != string(derivedDir) || !strings.Contains(derivedCluster, `"from": "ref PluginPreset demo/monitoring: `) || !strings.Contains(derivedCluster, `"team": "team-a"`) || !strings.Contains(derivedCluster, `"value": 12`) {
		t.Errorf("derived-eu-de-1: the cluster and the directory disagree, or the values are not derived:\ncluster\n%s\ndirectory\n%s", derivedCluster, derivedDir)
	}
}

// agent is `plugins run` as a process.
type agent struct {
	cmd     *exec.Cmd
	metrics string
	stderr  *watchtest.Buffer
	// metricsAddr and webhookAddr are where its servers listen, certDir
	// the directory of the webhook's serving certificate.
	metricsAddr, webhookAddr, certDir string
}

func startRun(t *testing.T) *agent {
	t.Helper()
	addr, webhook := watchtest.FreeAddr(t), watchtest.FreeAddr(t)
	_, port, err := net.SplitHostPort(webhook)
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{metrics: "http://" + addr + "/metrics", stderr: &watchtest.Buffer{}, metricsAddr: addr, webhookAddr: webhook, certDir: t.TempDir()}
	a.cmd = exec.Command(bin, "run", "--kubeconfig", server.Kubeconfig, "--metrics-bind-address", addr, "--webhook-host", "127.0.0.1", "--webhook-port", port, "--cert-dir", a.certDir)
	a.cmd.Stderr = a.stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- a.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("plugins run: %v\n%s", err, a.stderr.String())
			}
		case <-time.After(10 * time.Second):
			a.cmd.Process.Kill()
			t.Error("plugins run did not stop")
		}
		// Its webhooks stay registered, as a deployment's do while it
		// restarts; no other test's writes should call them.
		adm := server.Client(t).AdmissionregistrationV1()
		adm.MutatingWebhookConfigurations().Delete(context.Background(), "strata-plugins.greenhouse.sap", metav1.DeleteOptions{})
		adm.ValidatingWebhookConfigurations().Delete(context.Background(), "strata-plugins.greenhouse.sap", metav1.DeleteOptions{})
	})
	return a
}

// counter reads one sample of /metrics, 0 when absent.
func (a *agent) counter(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(a.metrics)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// pluginState is a Plugin's values, the overrides applied to it and its
// resourceVersion, as stored.
func pluginState(t *testing.T, c dynamic.Interface, ns, name string) (map[string]string, []string, string) {
	t.Helper()
	u, err := c.Resource(greenhouse.Resources[greenhouse.KindPlugin]).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(u.Object)
	var p greenhouse.Plugin
	if err := json.Unmarshal(j, &p); err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, v := range p.Spec.OptionValues {
		vals[v.Name] = valueString(v)
	}
	var applied []string
	if a := p.Annotations[greenhouse.AnnotationAppliedOverrides]; a != "" {
		applied = strings.Split(a, "\n")
	}
	return vals, applied, u.GetResourceVersion()
}

// valueString is a value as the tests compare it: its JSON, canonical, or
// "secret NAME#KEY".
func valueString(v greenhouse.OptionValue) string {
	switch {
	case v.ValueFrom != nil && v.ValueFrom.Secret != nil:
		return "secret " + v.ValueFrom.Secret.Name + "#" + v.ValueFrom.Secret.Key
	case v.Value != nil:
		var x any
		if err := json.Unmarshal(*v.Value, &x); err != nil {
			return string(*v.Value)
		}
		b, _ := json.Marshal(x)
		return string(b)
	}
	return ""
}

// waitValues waits until Plugin ns/name holds want for each key of want.
func waitValues(t *testing.T, c dynamic.Interface, ns, name string, want map[string]string) {
	t.Helper()
	var got map[string]string
	if watchtest.Until(30*time.Second, func() bool {
		got, _, _ = pluginState(t, c, ns, name)
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}) {
		return
	}
	t.Fatalf("%s/%s holds %v, want %v", ns, name, got, want)
}

func patch(t *testing.T, c dynamic.Interface, kind, ns, name, patch string) {
	t.Helper()
	r := c.Resource(greenhouse.Resources[kind])
	var err error
	if ns == "" {
		_, err = r.Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	} else {
		_, err = r.Namespace(ns).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatalf("patching %s %s/%s: %v", kind, ns, name, err)
	}
}

// warningList keeps the warnings the API server returns.
type warningList struct {
	mu   sync.Mutex
	list []string
}

func (w *warningList) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningList) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// runWithObjects installs the CRDs, starts `plugins run` and, once its
// webhooks are registered, creates the testdata's objects in namespace
// ns.
func runWithObjects(t *testing.T, ns string) (dynamic.Interface, *agent) {
	t.Helper()
	c := dynamic.NewForConfigOrDie(server.Config)
	setUp(t, c, ns)
	a := startRun(t)
	waitFor(t, "the webhooks registered", func() bool { return a.registered(t) })
	create(t, c, ns)
	return c, a
}

// registered reports whether the agent has registered its webhooks: the
// mutating one, which it registers last, calls it.
func (a *agent) registered(t *testing.T) bool {
	m, err := server.Client(t).AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "strata-plugins.greenhouse.sap", metav1.GetOptions{})
	return err == nil && len(m.Webhooks) == 1 && m.Webhooks[0].ClientConfig.URL != nil && strings.Contains(*m.Webhooks[0].ClientConfig.URL, "//"+a.webhookAddr+"/")
}

// TestRun layers the PluginOverrides over what Greenhouse's PluginPreset
// controller (presetController, its steps) and users write, as what
// feeds them changes (an override, a cluster's labels, a preset's value,
// an override deleted), keeps the applied-overrides annotation current,
// writes no Plugin whose values did not change, refuses in its webhook
// what it cannot compute values from, and serves /metrics and the
// webhooks behind idle and half-sent connections.
func TestRun(t *testing.T) {
	const ns = "org"
	c, a := runWithObjects(t, ns)
	startPresetController(t, c, ns, time.Hour)

	waitValues(t, c, ns, "monitoring-eu-de-1", map[string]string{
		"replicas": "3", "retention": `"90d"`, "logLevel": `"error"`,
		"alerts.webhook": "secret alerting#webhook-url", "apiToken": "secret monitoring-api#token",
	})
	if _, applied, _ := pluginState(t, c, ns, "monitoring-eu-de-1"); strings.Join(applied, ",") !=
		"PluginOverride org/org-wide,PluginOverride org/prod-clusters,PluginOverride org/monitoring-everywhere,PluginOverride org/monitoring-prod" {
		t.Errorf("applied overrides %v", applied)
	}
	waitValues(t, c, ns, "cert-manager-us", map[string]string{"replicas": "2", "installCRDs": "false"})
	// The definition's defaults are not written: Greenhouse's own webhook
	// merges them.
	if got, _, _ := pluginState(t, c, ns, "monitoring-eu-de-1"); got["alerts.enabled"] != "" {
		t.Errorf("a default written: alerts.enabled %s", got["alerts.enabled"])
	}

	// Both servers are up once values are written. A client holding idle
	// and half-sent connections keeps neither /metrics nor the webhooks
	// from anyone; a GET of a webhook carries no AdmissionReview and is
	// refused with 400.
	httpservetest.Siege(t, a.metricsAddr, nil, "/metrics", http.StatusOK)
	trusting := httpservetest.Trusting(t, filepath.Join(a.certDir, servingcert.CertFile))
	httpservetest.Siege(t, a.webhookAddr, trusting, "/validate", http.StatusBadRequest)
	httpservetest.Siege(t, a.webhookAddr, trusting, "/mutate", http.StatusBadRequest)

	// An override changes.
	patch(t, c, greenhouse.KindPluginOverride, ns, "prod-clusters", `{"spec":{"overrides":[{"name":"retention","value":"30d"},{"name":"logLevel","value":"debug"}]}}`)
	waitValues(t, c, ns, "monitoring-eu-de-1", map[string]string{"logLevel": `"debug"`})
	// A cluster's labels: eu-de-2 becomes prod; monitoring-prod still
	// leaves it out by name.
	patch(t, c, greenhouse.KindCluster, ns, "eu-de-2", `{"metadata":{"labels":{"tier":"prod"}}}`)
	waitValues(t, c, ns, "monitoring-eu-de-2", map[string]string{"logLevel": `"debug"`, "retention": `"14d"`})
	// A preset's value: Greenhouse writes it to eu-de-2; eu-de-1 keeps
	// its cluster override.
	patch(t, c, greenhouse.KindPluginPreset, ns, "monitoring", `{"spec":{"plugin":{"optionValues":[{"name":"replicas","value":4},{"name":"alerts.webhook","valueFrom":{"secret":{"name":"alerting","key":"webhook-url"}}}]}}}`)
	waitValues(t, c, ns, "monitoring-eu-de-2", map[string]string{"replicas": "4", "logLevel": `"debug"`})
	waitValues(t, c, ns, "monitoring-eu-de-1", map[string]string{"replicas": "3"})
	// A standalone Plugin: the override it got goes with the override,
	// its own value stays.
	if err := c.Resource(greenhouse.Resources[greenhouse.KindPluginOverride]).Namespace(ns).Delete(context.Background(), "cert-manager-crds", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitValues(t, c, ns, "cert-manager-us", map[string]string{"replicas": "2", "installCRDs": ""})

	// Nothing changes for a Cluster no Plugin runs on: every Plugin of the
	// namespace is reconciled, none admitted again.
	before := map[string]string{}
	for _, p := range []string{"monitoring-eu-de-1", "monitoring-eu-de-2", "cert-manager-us"} {
		_, _, before[p] = pluginState(t, c, ns, p)
	}
	// Let what earlier steps set off end: the count of reconciles no
	// longer moves.
	var unchanged float64
	for stable := 0; stable < 3; {
		n := a.counter(t, `plugins_reconciles_total{result="unchanged"}`)
		if n == unchanged {
			stable++
		} else {
			stable, unchanged = 0, n
		}
		time.Sleep(100 * time.Millisecond) // a quiet period: nothing signals that no more writes will come
	}
	readmitted := a.counter(t, "plugins_readmitted_total")
	apply(t, c, ns, manifests(t, "../testdata/greenhouse/clusters.yaml")[0].DeepCopy()) // exists already: no event
	u := manifests(t, "../testdata/greenhouse/clusters.yaml")[0]
	u.SetName("elsewhere")
	u.SetLabels(map[string]string{"region": "ap"})
	apply(t, c, ns, u)
	waitFor(t, "three Plugins reconciled", func() bool { return a.counter(t, `plugins_reconciles_total{result="unchanged"}`) >= unchanged+3 })
	if got := a.counter(t, "plugins_readmitted_total"); got != readmitted {
		t.Errorf("%v Plugins admitted again for an unrelated Cluster", got-readmitted)
	}
	for p, rv := range before {
		if _, _, now := pluginState(t, c, ns, p); now != rv {
			t.Errorf("%s rewritten (resourceVersion %s → %s) though its values did not change", p, rv, now)
		}
	}

	// The webhook.
	for _, tc := range []struct {
		kind, doc, want string
	}{
		{greenhouse.KindPluginPreset, `{"apiVersion":"greenhouse.sap/v1alpha1","kind":"PluginPreset","metadata":{"name":"twice"},
			"spec":{"plugin":{"pluginDefinitionRef":{"name":"kube-monitoring"},"optionValues":[{"name":"replicas","value":1}]},"clusterSelector":{"matchLabels":{"region":"eu"}},
			"clusterOptionOverrides":[{"clusterName":"eu-de-1","overrides":[{"name":"replicas","value":2}]},{"clusterName":"eu-de-1","overrides":[{"name":"replicas","value":3}]}]}}`,
			"spec.clusterOptionOverrides[1] and spec.clusterOptionOverrides[0] both override cluster eu-de-1"},
		{greenhouse.KindPluginPreset, `{"apiVersion":"greenhouse.sap/v1alpha1","kind":"PluginPreset","metadata":{"name":"dup-option"},
			"spec":{"plugin":{"pluginDefinitionRef":{"name":"kube-monitoring"},"optionValues":[{"name":"replicas","value":1},{"name":"replicas","value":2}]},"clusterSelector":{"matchLabels":{"region":"eu"}}}}`,
			`spec.plugin.optionValues[0] and spec.plugin.optionValues[1] both set option "replicas"`},
		{greenhouse.KindPluginOverride, `{"apiVersion":"greenhouse.sap/v1alpha1","kind":"PluginOverride","metadata":{"name":"typo"},
			"spec":{"pluginDefinitionNames":["kube-monitoring"],"overrides":[{"name":"retension","value":"1d"}]}}`,
			`PluginOverride org/typo: spec.overrides[0] (retension): org/kube-monitoring has no option "retension"`},
		{greenhouse.KindPluginOverride, `{"apiVersion":"greenhouse.sap/v1alpha1","kind":"PluginOverride","metadata":{"name":"path-into-int"},
			"spec":{"pluginDefinitionNames":["kube-monitoring"],"overrides":[{"name":"replicas","path":"/x","value":1}]}}`,
			`PluginOverride org/path-into-int: spec.overrides[0] (replicas): path /x: option "replicas" is of type int, and only a map's value has paths`},
		{greenhouse.KindPlugin, `{"apiVersion":"greenhouse.sap/v1alpha1","kind":"Plugin","metadata":{"name":"dup"},
			"spec":{"pluginDefinitionRef":{"name":"kube-monitoring"},"optionValues":[{"name":"a","value":1},{"name":"b","value":1},{"name":"a","value":2}]}}`,
			`spec.optionValues[0] and spec.optionValues[2] both set option "a"`},
	} {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(tc.doc)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Resource(greenhouse.Resources[tc.kind]).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "denied the request") {
			t.Errorf("%s %s: %v, want a denial saying %q", tc.kind, u.GetName(), err, tc.want)
		}
	}
	// The Events of a Plugin whose values cannot be computed.
	patch(t, c, greenhouse.KindPlugin, ns, "cert-manager-us", `{"spec":{"optionValues":[{"name":"replicas","value":"two"}]}}`)
	waitFor(t, "a Warning Event on cert-manager-us", func() bool {
		evs, err := server.Client(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=cert-manager-us"})
		if err != nil {
			return false
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "InvalidOptionValues" && strings.Contains(e.Message, `Plugin org/cert-manager-us: spec.optionValues[0] (replicas): value "two" is not of type int`)
		})
	})
	if got, _, _ := pluginState(t, c, ns, "cert-manager-us"); !maps.Equal(got, map[string]string{"replicas": `"two"`}) {
		t.Errorf("an invalid Plugin was rewritten: %v", got)
	}

	// A contest: "tie", as specific as prod-clusters (both select tier=prod
	// clusters, neither names a definition), sets logLevel otherwise. Its
	// write is admitted with a warning naming the contest, and the Plugin
	// and both overrides get a Warning Event.
	var warnings warningList
	cfg := rest.CopyConfig(server.Config)
	cfg.WarningHandler = &warnings
	tie := object(t, `{"apiVersion":"greenhouse.sap/v1alpha1","kind":"PluginOverride","metadata":{"name":"tie"},
		"spec":{"clusterSelector":{"labelSelector":{"matchLabels":{"tier":"prod"}}},"overrides":[{"name":"logLevel","value":"info"}]}}`)
	if _, err := dynamic.NewForConfigOrDie(cfg).Resource(greenhouse.Resources[greenhouse.KindPluginOverride]).Namespace(ns).Create(context.Background(), tie, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := warnings.all(); !slices.ContainsFunc(w, func(s string) bool {
		return strings.Contains(s, `Plugin org/monitoring-eu-de-1: option "logLevel" is contested: PluginOverride org/tie wins by creation time, then name, over PluginOverride org/prod-clusters, as specific, which gives "debug"`)
	}) {
		t.Errorf("the warnings of a contest: %q", w)
	}
	for _, involved := range []string{"monitoring-eu-de-1", "tie", "prod-clusters"} {
		waitFor(t, "a ContestedOption Event on "+involved, func() bool {
			evs, err := server.Client(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + involved})
			if err != nil {
				return false
			}
			return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
				return e.Reason == "ContestedOption" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, `option "logLevel" is contested`)
			})
		})
	}
	waitValues(t, c, ns, "monitoring-eu-de-1", map[string]string{"logLevel": `"info"`})
}
