package layers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoKubernetesClientDeps fails when package layers, which every
// component imports for --config, drop-ins and flags, comes to depend on
// client-go or on k8s.io/api's types: those belong to layers/namespaced,
// and would double a component's binary.
func TestNoKubernetesClientDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/stratacfg/strata/layers").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/client-go/") || strings.HasPrefix(pkg, "k8s.io/api/") {
			t.Errorf("package layers depends on %s", pkg)
		}
	}
}
