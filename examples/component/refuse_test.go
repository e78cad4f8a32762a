package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// gatesFile writes a configuration of version that sets n feature gates
// the component does not know, some 4 MB for 250,000: a hostile file
// just under the size limit.
func gatesFile(t testing.TB, version string, n int) string {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: component.example.strata.dev/%s\nkind: ComponentConfiguration\nfeatureGates:\n", version)
	for i := range n {
		fmt.Fprintf(&b, "  G%06d: true\n", i)
	}
	p := filepath.Join(t.TempDir(), "gates.yaml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRefuseManyGates refuses a file of 250,000 unknown feature gates in
// either version, naming the first nineteen and counting the rest in one
// error. What it costs beside reading the file is BenchmarkRefuseGates's
// to say.
func TestRefuseManyGates(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 MB file refused twice")
	}
	for _, version := range []string{"v1beta1", "v1alpha1"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"--config", gatesFile(t, version, 250_000), "--explain"}, io.Discard, &stderr)
		out := stderr.String()
		if code != 1 || !strings.Contains(out, "featureGates[G000000]: Invalid value: true: unrecognized feature gate: G000000") ||
			!strings.Contains(out, "featureGates[G000018]") || strings.Contains(out, "featureGates[G000019]") || !strings.Contains(out, "249981 more unrecognized feature gates") || len(out) > 8<<10 {
			t.Errorf("%s: exit %d, %d bytes on stderr:\n%.2000s", version, code, len(out), out)
		}
	}
}

// BenchmarkRefuseGates refuses the file of 250,000 unknown feature gates
// beside the time of turning its YAML into JSON, its reading: refusing
// it should cost about twice that.
func BenchmarkRefuseGates(b *testing.B) {
	for _, version := range []string{"v1beta1", "v1alpha1"} {
		path := gatesFile(b, version, 250_000)
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(version+"/yaml-to-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := yaml.YAMLToJSON(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(version+"/refuse", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if code := run(context.Background(), []string{"--config", path, "--explain"}, io.Discard, io.Discard); code != 1 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}
