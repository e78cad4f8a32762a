package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratacfg/strata/internal/watchtest"
)

// apiDirs are the packages hack/codegen.sh generates code in, from the
// repository's root: this example's, and the library tests' kinds.
var apiDirs = []string{"examples/component/apis/config", "examples/component/apis/config/v1alpha1", "examples/component/apis/config/v1beta1",
	"examples/component/apis/config/scheme", "examples/component/apis/config/validation", "examples/component/cmd/schemagen",
	"examples/controller/apis/defaults/v1alpha1",
	"internal/testkind", "internal/testkind/component", "internal/testkind/component/v1alpha1", "internal/testkind/component/v1beta1"}

// TestGeneratedCodeIsCurrent runs hack/codegen.sh, as `make generate`
// does, on a copy of the module's files it reads, and fails when a
// committed zz_generated file differs from what the generators write now.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	root := watchtest.RepoRoot(t)
	bin := filepath.Dir(watchtest.Tool(t, "deepcopy-gen"))
	for _, gen := range []string{"defaulter-gen", "conversion-gen", "validation-gen"} {
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
	// The library's packages, which the kinds import.
	for _, f := range libraryFiles(t, root) {
		copyFile(f)
	}
	var generated []string
	for _, dir := range apiDirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			rel := filepath.Join(dir, e.Name())
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
	if len(generated) != 18 {
		t.Fatalf("found %d generated files, want 18: %v", len(generated), generated)
	}
	cmd := exec.Command("bash", "hack/codegen.sh")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "BIN="+bin, "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/codegen.sh: %v\n%s", err, out)
	}
	// The schemas are written afresh: none was copied.
	schemas := func(root, dir string) []string {
		var out []string
		_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				out = append(out, rel)
			}
			return nil
		})
		return out
	}
	for _, dir := range schemaDirs {
		if got, want := schemas(root, dir), schemas(tmp, dir); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("committed schemas %v, generated %v: run make generate", got, want)
		}
		generated = append(generated, schemas(tmp, dir)...)
	}
	for _, rel := range generated {
		want := must(os.ReadFile(filepath.Join(tmp, rel)))
		got := must(os.ReadFile(filepath.Join(root, rel)))
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate", rel)
		}
	}
}

// schemaDirs hold the examples' JSON Schemas, from the repository's root.
var schemaDirs = []string{"examples/component/schemas", "examples/controller/schemas"}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// libraryFiles returns the library's Go files other than tests, from the
// repository's root: every package of its module outside examples/.
func libraryFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "examples" || rel == "bin" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(d.Name(), "zz_generated.") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
