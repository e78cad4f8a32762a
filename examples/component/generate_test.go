package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratacfg/strata/internal/watchtest"
)

// apiDirs are the packages hack/codegen.sh generates code in.
var apiDirs = []string{"apis/config", "apis/config/v1alpha1", "apis/config/v1beta1"}

// TestGeneratedCodeIsCurrent runs hack/codegen.sh, as `make generate`
// does, on a copy of the module's files it reads, and fails when a
// committed zz_generated file differs from what the generators write now.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	root := watchtest.RepoRoot(t)
	bin := filepath.Dir(watchtest.Tool(t, "deepcopy-gen"))
	for _, gen := range []string{"defaulter-gen", "conversion-gen"} {
		watchtest.Tool(t, gen)
	}
	tmp := t.TempDir()
	copyFile := func(rel string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(tmp, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, rel), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"go.mod", "go.sum", "hack/boilerplate.go.txt", "hack/codegen.sh"} {
		copyFile(f)
	}
	var generated []string
	for _, dir := range apiDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			rel := filepath.Join("examples/component", dir, e.Name())
			copyFile(rel)
			if strings.HasPrefix(e.Name(), "zz_generated.") {
				generated = append(generated, rel)
				// The generators must write it again, not leave it:
				// only its package clause stays.
				if err := os.WriteFile(filepath.Join(tmp, rel), []byte("package "+filepath.Base(dir)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if len(generated) != 7 {
		t.Fatalf("found %d generated files, want 7: %v", len(generated), generated)
	}
	cmd := exec.Command("bash", "hack/codegen.sh")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "BIN="+bin, "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/codegen.sh: %v\n%s", err, out)
	}
	for _, rel := range generated {
		want := must(os.ReadFile(filepath.Join(tmp, rel)))
		got := must(os.ReadFile(filepath.Join(root, rel)))
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate", rel)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
