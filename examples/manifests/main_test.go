package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/examples/manifests/admission"
	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/manifests"
)

// lines collects what run prints, line by line.
type lines struct {
	mu  sync.Mutex
	buf strings.Builder
	ch  chan line
}

func newLines() *lines { return &lines{ch: make(chan line, 100)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		s := l.buf.String()
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return len(p), nil
		}
		var x line
		if err := json.Unmarshal([]byte(s[:i]), &x); err != nil {
			panic("not a JSON line: " + s[:i])
		}
		l.ch <- x
		l.buf.Reset()
		l.buf.WriteString(s[i+1:])
	}
}

func (l *lines) next(t *testing.T) line {
	t.Helper()
	select {
	case x := <-l.ch:
		return x
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
		return line{}
	}
}

// quiet fails t if a line comes within d.
func (l *lines) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case x := <-l.ch:
		t.Fatalf("unexpected line %+v", x)
	case <-time.After(d):
	}
}

// testdata returns the files of testdata/plugin.
func testdata(t *testing.T, plugin string) map[string]string {
	t.Helper()
	files := map[string]string{}
	dir := filepath.Join("testdata", plugin)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

// with returns base with kv's files set, or removed when the content is "".
func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

func absTestdata(t *testing.T, plugin string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", plugin))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOnce loads each plugin's shipped directory once.
// apiserverHash is the hash kube-apiserver reports for dir, as its
// manifest loader computes it (k8s.io/apiserver
// pkg/admission/plugin/manifest LoadFiles): each non-empty .yaml, .yml or
// .json file directly in dir, in name order, its bytes and a NUL.
func apiserverHash(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, e := range entries {
		if ext := strings.ToLower(filepath.Ext(e.Name())); e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 {
			h.Write(append(b, 0))
		}
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

func TestOnce(t *testing.T) {
	want := map[string][]string{
		admission.ValidatingAdmissionPolicy:  {"ValidatingAdmissionPolicy/deny-privileged.static.k8s.io", "ValidatingAdmissionPolicy/require-team-label.static.k8s.io", "ValidatingAdmissionPolicyBinding/deny-privileged.static.k8s.io"},
		admission.MutatingAdmissionPolicy:    {"MutatingAdmissionPolicy/default-service-account.static.k8s.io", "MutatingAdmissionPolicyBinding/default-service-account.static.k8s.io"},
		admission.ValidatingAdmissionWebhook: {"ValidatingWebhookConfiguration/audit.static.k8s.io"},
		admission.MutatingAdmissionWebhook:   {"MutatingWebhookConfiguration/inject.static.k8s.io"},
	}
	for _, plugin := range admission.Plugins {
		out := newLines()
		var stderr bytes.Buffer
		if code := run(t.Context(), []string{"--dir", absTestdata(t, plugin), "--plugin", plugin, "--once"}, out, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", plugin, code, stderr.String())
		}
		l := out.next(t)
		if l.Status != "success" || strings.Join(l.Objects, ",") != strings.Join(want[plugin], ",") || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(l.Hash) || l.Error != "" {
			t.Errorf("%s: line %+v", plugin, l)
		}
		if want := apiserverHash(t, absTestdata(t, plugin)); l.APIServerHash != want {
			t.Errorf("%s: apiserverHash %q, want kube-apiserver's %q", plugin, l.APIServerHash, want)
		}
	}
	// The raw line: the five keys, objects sorted.
	var stdout bytes.Buffer
	run(t.Context(), []string{"--dir", absTestdata(t, admission.MutatingAdmissionWebhook), "--plugin", admission.MutatingAdmissionWebhook, "--once"}, &stdout, io.Discard)
	if !regexp.MustCompile(`^\{"status":"success","hash":"sha256:[0-9a-f]{64}","apiserverHash":"sha256:[0-9a-f]{64}","objects":\["MutatingWebhookConfiguration/inject.static.k8s.io"\],"error":""\}\n$`).MatchString(stdout.String()) {
		t.Errorf("stdout %q", stdout.String())
	}
}

// TestOnceFailure loads directories kube-apiserver refuses: exit 1 and a
// failure line naming the file and the problem.
func TestOnceFailure(t *testing.T) {
	vap := testdata(t, admission.ValidatingAdmissionPolicy)
	policy := vap["10-deny-privileged.yaml"]
	for _, tc := range []struct {
		name, plugin string
		files        map[string]string
		want         []string
	}{
		{"a binding to a missing policy", admission.ValidatingAdmissionPolicy,
			with(vap, "10-deny-privileged.yaml", strings.Replace(policy, "  policyName: deny-privileged.static.k8s.io", "  policyName: gone.static.k8s.io", 1)),
			[]string{"10-deny-privileged.yaml#2", "spec.policyName", "ValidatingAdmissionPolicy gone.static.k8s.io is not in the set"}},
		{"a name defined twice", admission.ValidatingAdmissionPolicy,
			with(vap, "30-again.yaml", policy),
			[]string{"30-again.yaml#1", "10-deny-privileged.yaml#1", "Duplicate value"}},
		{"the wrong plugin", admission.MutatingAdmissionWebhook, testdata(t, admission.ValidatingAdmissionWebhook),
			[]string{"10-audit.yaml", "unsupported type *v1.ValidatingWebhookConfiguration"}},
		{"a service reference", admission.ValidatingAdmissionWebhook,
			map[string]string{"a.yaml": strings.Replace(testdata(t, admission.ValidatingAdmissionWebhook)["10-audit.yaml"], "    url: https://audit.example.com:8443/validate\n", "    service: {name: audit, namespace: kube-system}\n", 1)},
			[]string{"a.yaml", "webhooks[0] (audit.example.com): clientConfig.service"}},
		{"the internal version", admission.ValidatingAdmissionPolicy,
			map[string]string{"a.yaml": strings.Replace(policy, "apiVersion: admissionregistration.k8s.io/v1", "apiVersion: admissionregistration.k8s.io/__internal", 1)},
			[]string{"a.yaml#1: apiVersion admissionregistration.k8s.io/__internal is the in-memory version, never written down"}},
		{"a missing directory", admission.ValidatingAdmissionPolicy, nil, []string{"no such file or directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if tc.files != nil {
				watchtest.WriteFiles(t, dir, tc.files)
			}
			out := newLines()
			if code := run(t.Context(), []string{"--dir", dir, "--plugin", tc.plugin, "--once"}, out, io.Discard); code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			l := out.next(t)
			if l.Status != "failure" || len(l.Objects) != 0 {
				t.Fatalf("line %+v", l)
			}
			for _, w := range tc.want {
				if !strings.Contains(l.Error, w) {
					t.Errorf("error %q does not mention %q", l.Error, w)
				}
			}
		})
	}
}

// TestLiveReload runs the command on a ConfigMap-style mount that kubelet's
// AtomicWriter updates: every update is read whole from one generation, a
// refused one keeps the set in effect and is counted once however often
// the directory is polled, the metrics carry kube-apiserver's names and
// the plugin, and /metrics answers behind idle and half-sent connections.
func TestLiveReload(t *testing.T) {
	dir := t.TempDir()
	kw := watchtest.NewKubeletWriter(t, dir)
	base := testdata(t, admission.ValidatingAdmissionPolicy)
	kw.Write(t, base)

	out := newLines()
	stderr := &watchtest.Buffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--dir", dir, "--plugin", admission.ValidatingAdmissionPolicy, "--poll-interval", "20ms", "--metrics-addr", "127.0.0.1:0"}, out, stderr)
	}()
	initial := out.next(t)
	if initial.Status != "success" || len(initial.Objects) != 3 {
		t.Fatalf("initial line %+v", initial)
	}
	// A client holding idle and half-sent connections does not keep a
	// probe from /metrics.
	httpservetest.Siege(t, metricsAddr(t, stderr.String()), nil, "/metrics", http.StatusOK)

	// A refused update: one failure line, then silence while the polls
	// read the same content again.
	bad := with(base, "30-orphan.yaml", strings.Replace(strings.SplitN(base["10-deny-privileged.yaml"], "---\n", 2)[1], "name: deny-privileged.static.k8s.io\nspec:\n  policyName: deny-privileged", "name: orphan.static.k8s.io\nspec:\n  policyName: gone", 1))
	kw.Write(t, bad)
	l := out.next(t)
	if l.Status != "failure" || strings.Join(l.Objects, ",") != strings.Join(initial.Objects, ",") || l.Hash == initial.Hash || !strings.Contains(l.Error, "30-orphan.yaml") ||
		l.APIServerHash != initial.APIServerHash || initial.APIServerHash == "" {
		t.Fatalf("refused update: line %+v", l)
	}
	out.quiet(t, 300*time.Millisecond) // fifteen polls

	// A rename changes the hash, as the set's provenance changes, but not
	// kube-apiserver's, which hashes the files' bytes in name order only.
	renamed := with(base, "20-require-team-label.json", "", "25-require-team-label.json", base["20-require-team-label.json"])
	kw.Write(t, renamed)
	l = out.next(t)
	if l.Status != "success" || strings.Join(l.Objects, ",") != strings.Join(initial.Objects, ",") || l.Hash == initial.Hash || l.APIServerHash != initial.APIServerHash {
		t.Fatalf("renamed file: line %+v", l)
	}

	// Every file removed: a valid, empty set (kube-apiserver's
	// FilesDeletionClearsHooks).
	kw.Write(t, map[string]string{})
	if l = out.next(t); l.Status != "success" || len(l.Objects) != 0 {
		t.Fatalf("every file removed: line %+v", l)
	}

	body := scrape(t, stderr.String())
	for _, m := range []string{
		`apiserver_manifest_admission_config_controller_automatic_reloads_total{plugin="ValidatingAdmissionPolicy",status="success"} 3`,
		`apiserver_manifest_admission_config_controller_automatic_reloads_total{plugin="ValidatingAdmissionPolicy",status="failure"} 1`,
		`apiserver_manifest_admission_config_controller_last_config_info{hash="` + l.APIServerHash + `",plugin="ValidatingAdmissionPolicy"} 1`,
		`apiserver_manifest_admission_config_controller_automatic_reload_last_timestamp_seconds{plugin="ValidatingAdmissionPolicy",status="failure"}`,
	} {
		if !strings.Contains(body, m) {
			t.Errorf("/metrics lacks %s:\n%s", m, body)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// metricsAddr is the address the command's stderr says it serves
// /metrics on.
func metricsAddr(t *testing.T, stderr string) string {
	t.Helper()
	addr := regexp.MustCompile(`serving /metrics on (\S+)`).FindStringSubmatch(stderr)
	if addr == nil {
		t.Fatalf("no metrics address in %q", stderr)
	}
	return addr[1]
}

func scrape(t *testing.T, stderr string) string {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr(t, stderr) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// TestGitSync runs the command on a directory behind a root link that a
// git-sync style writer swaps: each swap is one new set.
func TestGitSync(t *testing.T) {
	g := watchtest.NewGitSync(t.TempDir(), "current")
	webhooks := testdata(t, admission.MutatingAdmissionWebhook)
	if err := g.Write(prefix("admission/", webhooks)); err != nil {
		t.Fatal(err)
	}
	out := newLines()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--dir", filepath.Join(g.Path(), "admission"), "--plugin", admission.MutatingAdmissionWebhook, "--poll-interval", "50ms"}, out, io.Discard)
	}()
	if l := out.next(t); l.Status != "success" || len(l.Objects) != 1 {
		t.Fatalf("initial %+v", l)
	}
	second := strings.ReplaceAll(webhooks["10-inject.yaml"], "inject", "second")
	if err := g.Write(prefix("admission/", with(webhooks, "20-second.yaml", second))); err != nil {
		t.Fatal(err)
	}
	if l := out.next(t); l.Status != "success" || strings.Join(l.Objects, ",") != "MutatingWebhookConfiguration/inject.static.k8s.io,MutatingWebhookConfiguration/second.static.k8s.io" {
		t.Fatalf("after the swap %+v", l)
	}
	cancel()
	<-done
}

func prefix(p string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[p+k] = v
	}
	return out
}

// TestComposite puts the static set ahead of the objects from the API, as
// kube-apiserver does, and refuses an API object that takes a static name.
func TestComposite(t *testing.T) {
	set, err := admission.Load(absTestdata(t, admission.ValidatingAdmissionPolicy), admission.ValidatingAdmissionPolicy)
	if err != nil {
		t.Fatal(err)
	}
	api := func(name string) runtime.Object {
		p := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"))
		return p
	}
	c := &manifests.Composite{
		Static:         func() *manifests.Set { return set },
		Dynamic:        func() []runtime.Object { return []runtime.Object{api("from-api"), api("spoof.static.k8s.io")} },
		ReservedSuffix: admission.StaticSuffix,
	}
	objs, refused := c.List()
	var names []string
	for _, o := range objs {
		names = append(names, o.(metav1.Object).GetName())
	}
	if strings.Join(names, ",") != "deny-privileged.static.k8s.io,deny-privileged.static.k8s.io,require-team-label.static.k8s.io,from-api" {
		t.Errorf("objects %v", names)
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Error(), `"spoof.static.k8s.io" refused`) {
		t.Errorf("refused %v", refused)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--dir", "relative/dir", "--plugin", admission.ValidatingAdmissionPolicy},
		{"--dir", "/x"},
		{"--dir", "/x", "--plugin", "NamespaceLifecycle"},
		{"--dir", "/x", "--plugin", admission.ValidatingAdmissionPolicy, "--poll-interval", "0s"},
		{"--dir", "/x", "--plugin", admission.ValidatingAdmissionPolicy, "--poll-interval", "1ns"},
		{"--dir", "/x", "--plugin", admission.ValidatingAdmissionPolicy, "--poll-interval", "-1s"},
		{"--dir", "/x", "--plugin", admission.ValidatingAdmissionPolicy, "extra"},
		{"--nope"},
	} {
		var stdout, stderr strings.Builder
		if code := run(t.Context(), args, &stdout, &stderr); code != 2 || stdout.Len() != 0 || stderr.Len() == 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, stdout.String(), stderr.String())
		}
	}
}

func TestInvalidInitialSet(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"p.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	out := newLines()
	var stderr strings.Builder
	if code := run(t.Context(), []string{"--dir", dir, "--plugin", admission.ValidatingAdmissionPolicy}, out, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if l := out.next(t); l.Status != "failure" || !strings.Contains(l.Error, "p.yaml") || len(l.Objects) != 0 {
		t.Fatalf("line %+v", l)
	}
	if !strings.Contains(stderr.String(), "refusing to start") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

// TestDirIsAFile: --dir names a directory, as kube-apiserver's
// staticManifestsDir must be: a file there is a failure, not a set of its
// objects.
func TestDirIsAFile(t *testing.T) {
	vap := testdata(t, admission.ValidatingAdmissionPolicy)
	file := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(file, []byte(vap["10-deny-privileged.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	out := newLines()
	code := run(t.Context(), []string{"--dir", file, "--plugin", admission.ValidatingAdmissionPolicy, "--once"}, out, io.Discard)
	l := out.next(t)
	if code != 1 || l.Status != "failure" || len(l.Objects) != 0 {
		t.Errorf("--dir %s, a file: exit %d, line %+v; want exit 1 and a failure naming it", file, code, l)
	}
}
