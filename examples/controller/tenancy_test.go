package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

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
	objs, err := readManifests(manifests)
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
