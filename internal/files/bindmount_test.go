package files

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestWriteToABindMountedFile writes to a file that is a mount point of
// its own (a hostPath of type File, a container's single-file bind mount,
// as the watcher's warning for such targets names them): rename(2) cannot
// replace a mount point (EBUSY), so Write must write it in place, as it
// already does for a file it may not give away, rather than fail.
func TestWriteToABindMountedFile(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "host.yaml"), filepath.Join(dir, "out.yaml")
	if err := os.WriteFile(src, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", src, dst).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount a file here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dst).Run() })
	if err := Write(dst, []byte("new"), 0o600); err != nil {
		t.Fatalf("a bind-mounted file: %v", err)
	}
	if b, _ := os.ReadFile(src); string(b) != "new" {
		t.Errorf("the mounted file holds %q, want %q", b, "new")
	}
}
