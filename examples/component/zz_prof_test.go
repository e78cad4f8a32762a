package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestZZProf(t *testing.T) {
	data, _ := os.ReadFile("/tmp/gates.yaml")
	start := time.Now()
	if _, err := yaml.YAMLToJSON(data); err != nil {
		t.Fatal(err)
	}
	t.Logf("YAMLToJSON %v", time.Since(start))
	start = time.Now()
	run(context.Background(), []string{"--config", "/tmp/gates.yaml", "--explain"}, io.Discard, io.Discard)
	t.Logf("refuse %v", time.Since(start))
}
