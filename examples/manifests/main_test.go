package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
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

func testdata(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	entries, err := os.ReadDir("testdata/policies")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata/policies", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

func with(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

const binding = `apiVersion: policy.example.strata.dev/v1
kind: PolicyBinding
metadata:
  name: %s
spec:
  policyName: %s
`

func bindingYAML(name, policy string) string {
	return fmt.Sprintf(binding, name, policy)
}

// TestLiveReload runs the command on a ConfigMap-style mount that kubelet's
// AtomicWriter updates.
func TestLiveReload(t *testing.T) {
	dir := t.TempDir()
	kw := watchtest.NewKubeletWriter(t, dir)
	base := testdata(t)
	kw.Write(t, base)

	out := newLines()
	stderr := &watchtest.Buffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--dir", dir, "--poll-interval", "1h", "--metrics-addr", "127.0.0.1:0"}, out, stderr)
	}()

	initial := out.next(t)
	want := []string{"Policy/deny-privileged.static.strata.dev", "Policy/require-team-label.static.strata.dev", "PolicyBinding/deny-privileged-everywhere.static.strata.dev"}
	if initial.Status != "success" || strings.Join(initial.Objects, ",") != strings.Join(want, ",") || !strings.HasPrefix(initial.Hash, "sha256:") {
		t.Fatalf("initial line %+v", initial)
	}

	failures := []struct {
		name   string
		files  map[string]string
		errors []string
	}{
		{"a binding to a missing policy",
			with(base, "30-bind.yaml", bindingYAML("b.static.strata.dev", "missing.static.strata.dev")),
			[]string{"30-bind.yaml", "spec.policyName", "Policy missing.static.strata.dev is not in the set"}},
		{"a name without the suffix",
			with(base, "30-bind.yaml", bindingYAML("b", "deny-privileged.static.strata.dev")),
			[]string{"30-bind.yaml", "metadata.name", `must end in ".static.strata.dev"`}},
		{"a name defined twice",
			with(base, "30-dup.yaml", strings.Replace(base["10-deny-privileged.yaml"], "---", "---\n# again", 1)),
			[]string{"30-dup.yaml#1", "10-deny-privileged.yaml#1", "Duplicate value"}},
		{"an unknown field",
			with(base, "30-typo.yaml", "apiVersion: policy.example.strata.dev/v1\nkind: Policy\nmetadata: {name: x.static.strata.dev}\nspec: {rul: typo}\n"),
			[]string{"30-typo.yaml", "unknown field", "spec.rul"}},
		{"a policy without a rule",
			with(base, "30-empty.yaml", "apiVersion: policy.example.strata.dev/v1\nkind: Policy\nmetadata: {name: x.static.strata.dev}\nspec: {}\n"),
			[]string{"30-empty.yaml", "spec.rule", "Required value"}},
	}
	for _, f := range failures {
		kw.Write(t, f.files)
		l := out.next(t)
		if l.Status != "failure" || strings.Join(l.Objects, ",") != strings.Join(want, ",") || l.Hash == "" || l.Hash == initial.Hash {
			t.Fatalf("%s: line %+v", f.name, l)
		}
		for _, e := range f.errors {
			if !strings.Contains(l.Error, e) {
				t.Errorf("%s: error %q does not mention %q", f.name, l.Error, e)
			}
		}
	}

	// A valid update applies, and a file that is not a manifest changes
	// the hash but nothing else.
	kw.Write(t, with(base, "30-bind.yaml", bindingYAML("team.static.strata.dev", "require-team-label.static.strata.dev")))
	l := out.next(t)
	if l.Status != "success" || len(l.Objects) != 4 || l.Objects[3] != "PolicyBinding/team.static.strata.dev" {
		t.Fatalf("valid update: %+v", l)
	}

	addr := regexp.MustCompile(`serving /metrics on (\S+)`).FindStringSubmatch(stderr.String())
	if addr == nil {
		t.Fatalf("no metrics address in %q", stderr.String())
	}
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{
		`example_manifests_automatic_reloads_total{status="success"} 2`,
		`example_manifests_automatic_reloads_total{status="failure"} 5`,
		`example_manifests_last_config_info{hash="` + l.Hash + `"} 1`,
		`example_manifests_automatic_reload_last_timestamp_seconds{status="success"}`,
	} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %s:\n%s", m, body)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestInvalidInitialSet(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(bindingYAML("b.static.strata.dev", "nope.static.strata.dev")), 0o644)
	out := newLines()
	var stderr strings.Builder
	if code := run(t.Context(), []string{"--dir", dir}, out, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if l := out.next(t); l.Status != "failure" || !strings.Contains(l.Error, "nope.static.strata.dev") || len(l.Objects) != 0 {
		t.Fatalf("line %+v", l)
	}
	if !strings.Contains(stderr.String(), "refusing to start") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--dir", "relative/dir"}, {"--dir", "/x", "--poll-interval", "0s"}, {"--dir", "/x", "--poll-interval", "1ns"}, {"--dir", "/x", "--poll-interval", "-1s"}, {"--nope"}} {
		var stderr strings.Builder
		if code := run(t.Context(), args, io.Discard, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
