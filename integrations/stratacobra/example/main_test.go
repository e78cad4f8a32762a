package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratacfg/strata/integrations/stratacobra"
)

// execute runs the tree on args as main does, and returns the exit code,
// stdout and stderr.
func execute(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root, err := newRoot()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(args)
	return stratacobra.ExitCode(root.ExecuteContext(context.Background())), stdout.String(), stderr.String()
}

// TestCobraTree runs a Cobra tree whose serve command is bound to a strata
// component: strata's flags, defaults, output flags, messages and exit
// codes, beside a plain Cobra command.
func TestCobraTree(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nport: 9443\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nprot: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"the file", []string{"serve", "--config", file}, 0, "would serve on port 9443 (from file " + file + ")", ""},
		{"a flag wins when set", []string{"serve", "--config", file, "--port", "9000"}, 0, "would serve on port 9000 (from flag --port)", ""},
		{"no file: the flag's own default", []string{"serve"}, 0, "would serve on port 10250 (from legacy-default --port)", ""},
		{"explain", []string{"serve", "--config", file, "--explain"}, 0, `"/port"`, ""},
		{"print", []string{"serve", "--config", file, "--print-config"}, 0, "port: 9443", ""},
		{"strict decoding", []string{"serve", "--config", bad}, 1, "", `example: ` + bad},
		{"an unknown flag", []string{"serve", "--bogus"}, 2, "", "example: unknown flag: --bogus\n\nUsage: example serve --config=FILE"},
		{"an argument", []string{"serve", "extra"}, 2, "", `example: unexpected argument "extra": this command takes only flags`},
		{"a refused combination", []string{"serve", "--config", file, "--explain", "--migrate-config"}, 2, "", "example: --explain explains the effective configuration, --migrate-config rewrites the file: give one"},
		{"help", []string{"serve", "--help"}, 0, "Load the configuration and say what would be served\n\nUsage: example serve --config=FILE", ""},
		{"flag names normalized", []string{"serve", "--config", file, "--decode_mode", "strict"}, 0, "would serve on port 9443", ""},
		{"the plain command", []string{"version"}, 0, "example v0.0.0", ""},
		{"an unknown command", []string{"nope"}, 1, "", "unknown command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, c.args...)
			if code != c.code || !strings.Contains(stdout, c.stdout) || !strings.Contains(stderr, c.stderr) {
				t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout with %q, stderr with %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
			}
		})
	}
	// The usage is strata's: sections, and the defaults the component
	// really uses.
	_, help, _ := execute(t, "serve", "--help")
	for _, want := range []string{"--config string", "--explain", "--port int32", "--decode-mode string"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	// --explain is strata's JSON.
	_, out, _ := execute(t, "serve", "--config", file, "--explain")
	var e map[string]any
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("--explain: %v\n%s", err, out)
	}
}
