package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConstructorErrorCut gives Tekton's constructor a 200 KB
// default-pod-template that does not parse: its error quotes the value
// whole, and strata passes on at most text.MaxMessage bytes of it.
func TestConstructorErrorCut(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/manifests/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	huge, _ := json.Marshal("nodeSelector: [" + strings.Repeat("a", 200_000))
	tenant := `apiVersion: v1
kind: ConfigMap
metadata:
  name: tekton-config-defaults
  namespace: team-a
  labels: {app.kubernetes.io/part-of: tekton-pipelines, tekton.dev/pipeline-config: "true"}
data:
  default-pod-template: ` + string(huge) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "namespaces.yaml"), []byte(tenant), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := resolveDir(t, "team-a", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	out := decode(t, stdout)
	if len(out.Rejected) != 1 || !strings.Contains(out.Rejected[0].Reason, "more bytes)") || len(out.Rejected[0].Reason) > 600 {
		n := 0
		if len(out.Rejected) > 0 {
			n = len(out.Rejected[0].Reason)
		}
		t.Errorf("rejected %d, the reason %d bytes: want one, cut", len(out.Rejected), n)
	}
	if len(stdout) > 64<<10 {
		t.Errorf("the output is %d bytes", len(stdout))
	}
}
