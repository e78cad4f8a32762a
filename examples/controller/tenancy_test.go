package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/stratacfg/strata/internal/kubeobjects"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced/namespacedtest"
)

// tenancyGuide is the guide whose worked examples this test runs.
var tenancyGuide = filepath.Join("..", "..", "docs", "TENANCY.md")

// guideBlocks returns the code blocks of the guide that follow a comment
// line starting with marker, by the rest of that line.
func guideBlocks(t *testing.T, marker string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(tenancyGuide)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	lines := strings.Split(string(data), "\n")
	for i := 0; i+1 < len(lines); i++ {
		rest, ok := strings.CutPrefix(lines[i], "<!-- "+marker+" ")
		if !ok || !strings.HasPrefix(lines[i+1], "```") {
			continue
		}
		var body []string
		for j := i + 2; j < len(lines) && lines[j] != "```"; j++ {
			body = append(body, lines[j])
		}
		out[strings.TrimSuffix(rest, " -->")] = strings.Join(body, "\n")
	}
	if len(out) == 0 {
		t.Fatalf("%s has no %q block", tenancyGuide, marker)
	}
	return out
}

// TestTenancyGuideOutputs runs the commands whose output the guide shows,
// and checks that it shows what they print.
func TestTenancyGuideOutputs(t *testing.T) {
	for cmd, want := range guideBlocks(t, "output of:") {
		args := strings.Fields(cmd)
		if len(args) < 2 || args[0] != "controller" {
			t.Fatalf("the guide shows the output of %q, not a controller command", cmd)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args[1:], &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", cmd, code, stderr.String())
		}
		if got := strings.TrimRight(stdout.String(), "\n"); got != want {
			t.Errorf("%s prints something else than the guide shows:\n%s", cmd, got)
		}
	}
}

// TestTenancyGuideEventNote resolves the example's manifests and checks
// the KeysRefused Event the guide shows a tenant.
func TestTenancyGuideEventNote(t *testing.T) {
	objs, err := kubeobjects.ReadDir(manifests)
	if err != nil {
		t.Fatal(err)
	}
	o, err := options(0)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(16)
	o.Recorder = rec
	r, err := namespacedtest.New(o, objs...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for what, want := range guideBlocks(t, "note of:") {
		reason, cm, ok := strings.Cut(what, " on ")
		ns, _, _ := strings.Cut(cm, "/")
		if !ok {
			t.Fatalf("a note of %q: want REASON on NAMESPACE/NAME", what)
		}
		if _, err := r.ForNamespace(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(rec.Events) > 0 {
			got = append(got, <-rec.Events)
		}
		found := false
		for _, e := range got {
			if e == "Warning "+reason+" "+want {
				found = true
			}
		}
		if !found {
			t.Errorf("the guide shows the %s Event %q; the resolver recorded %q", what, want, got)
		}
	}
}

// TestResolveFromHostileDir gives resolve --from-dir directories a careless
// or hostile writer made: what has no manifest's name is not read, and a
// manifest's name on a device, a FIFO or a huge file fails at once, by
// name, having read at most the limit.
func TestResolveFromHostileDir(t *testing.T) {
	manifest := "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n"
	for _, tc := range []struct {
		name  string
		entry func(dir string) error
		want  string // "" for success
	}{
		{"a dangling README", func(d string) error { return os.Symlink(filepath.Join(d, "gone"), filepath.Join(d, "README")) }, ""},
		{"a FIFO notes.txt", func(d string) error { return syscall.Mkfifo(filepath.Join(d, "notes.txt"), 0o644) }, ""},
		{"a link to /dev/zero", func(d string) error { return os.Symlink("/dev/zero", filepath.Join(d, "zero.yaml")) }, "zero.yaml is a symbolic link that leads outside its source (it points to /dev/zero)"},
		{"a FIFO", func(d string) error { return syscall.Mkfifo(filepath.Join(d, "pipe.yaml"), 0o644) }, "pipe.yaml is a named pipe (FIFO), not a regular file"},
		{"a link with a manifest's name to a directory", func(d string) error {
			if err := os.Mkdir(filepath.Join(d, "sub"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(d, "sub"), filepath.Join(d, "more.yaml"))
		}, "more.yaml"},
		{"a directory with a manifest's name", func(d string) error { return os.Mkdir(filepath.Join(d, "dir.yaml"), 0o755) }, ""},
		{"a 100 MB file", func(d string) error {
			f, err := os.Create(filepath.Join(d, "big.yaml"))
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(100 << 20) // sparse: costs no disk
		}, "big.yaml is over the limit of 4194304 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "ns.yaml"), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.entry(dir); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var code int
			var stdout, stderr bytes.Buffer
			go func() {
				defer close(done)
				code = run(context.Background(), []string{"resolve", "--namespace", "team-a", "--from-dir", dir}, &stdout, &stderr)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("resolve --from-dir blocked")
			}
			switch {
			case tc.want == "" && code != 0:
				t.Errorf("exit %d: %s", code, stderr.String())
			case tc.want != "" && (code == 0 || !strings.Contains(stderr.String(), tc.want)):
				t.Errorf("exit %d, stderr %q; want a failure saying %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestResolveFromDirRefusesDuplicates gives resolve --from-dir a
// ConfigMap defined twice and a key written twice: each is an error
// naming where, not a silent last-one-wins.
func TestResolveFromDirRefusesDuplicates(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: strata-defaults, namespace: strata-system}\ndata: {backoffLimit: \"3\"}\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a ConfigMap in two files", map[string]string{"a.yaml": cm, "b.yaml": "# again\n---\n" + cm},
			"b.yaml: document 2: ConfigMap strata-system/strata-defaults is also defined in "},
		{"a key written twice", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: strata-defaults, namespace: strata-system}\ndata:\n  backoffLimit: \"3\"\n  backoffLimit: \"4\"\n"},
			`a.yaml: document 1: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			watchtest.WriteFiles(t, dir, tc.files)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"resolve", "--namespace", "team-a", "--from-dir", dir}, &stdout, &stderr)
			if code == 0 || !strings.Contains(stderr.String(), tc.want) || (tc.name == "a key written twice" && !strings.Contains(stderr.String(), `"backoffLimit" already set`)) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q", code, stderr.String(), tc.want)
			}
		})
	}
}
