package strata_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sourceMarker names the file a code block of the documentation is an
// excerpt of.
var sourceMarker = regexp.MustCompile(`^<!-- source: (\S+) -->$`)

// TestDocSnippets checks every code block of the README and docs/: a Go
// block must name, in a "<!-- source: PATH -->" line right above it, the
// file it is an excerpt of, and every block that names one must appear in
// that file as it is. Those files compile and their tests run, so every
// Go snippet a user copies compiles and runs.
func TestDocSnippets(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range append([]string{"README.md"}, docs...) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			lang, ok := strings.CutPrefix(lines[i], "```")
			if !ok || lang == "" {
				continue
			}
			start := i
			var body []string
			for i++; i < len(lines) && lines[i] != "```"; i++ {
				body = append(body, lines[i])
			}
			var source string
			if start > 0 {
				if m := sourceMarker.FindStringSubmatch(lines[start-1]); m != nil {
					source = m[1]
				}
			}
			where := doc + ":" + strconv.Itoa(start+1)
			switch {
			case source == "" && lang == "go":
				t.Errorf("%s: a Go block with no <!-- source: PATH --> line above it", where)
			case source == "":
			default:
				src, err := os.ReadFile(source)
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				if !strings.Contains(string(src), strings.Join(body, "\n")) {
					t.Errorf("%s: the block is not in %s as it is; copy it again from there", where, source)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Error("no block checked")
	}
}

// TestGeneratorRecipe runs, in an empty directory, the recipe
// docs/COMPONENT.md gives for building the code generators in a module of
// one's own, as a reader would paste it, and runs each generator it
// builds. It reads the module proxy (or the module cache `make tools`
// filled).
func TestGeneratorRecipe(t *testing.T) {
	data, err := os.ReadFile("docs/COMPONENT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## 2. Generate deep copies")
	if !ok {
		t.Fatal("docs/COMPONENT.md has no section 2")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 || !strings.Contains(block, "go get k8s.io/code-generator@") {
		t.Fatalf("section 2 does not start with the recipe:\n%s", block)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the recipe failed: %v\n%s", err, out)
	}
	for _, g := range []string{"deepcopy-gen", "defaulter-gen", "conversion-gen", "validation-gen"} {
		out, err := exec.Command(filepath.Join(dir, "bin", g), "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--output-file") {
			t.Errorf("bin/%s --help: %v\n%s", g, err, out)
		}
	}
}
