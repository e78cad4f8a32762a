package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxBinaryBytes is the size the component binary must stay under: a
// component that loads --config, drop-ins and flags links no client-go.
const maxBinaryBytes = 20 << 20

func TestBinarySize(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "component")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= maxBinaryBytes {
		t.Errorf("the component binary is %d bytes, over %d", st.Size(), maxBinaryBytes)
	}
	t.Logf("the component binary is %.1f MB", float64(st.Size())/(1<<20))
}
