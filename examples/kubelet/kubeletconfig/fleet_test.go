package kubeletconfig_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratacfg/strata/examples/kubelet/kubeletconfig"
)

// TestOneFileForAMixedFleet loads one kubelet-config, as kubeadm hands
// every node, that sets a field kubelet refuses on Windows: a Linux node
// applies it, a Windows node skips it and says so, where kubelet would
// fail to start; the refusal stays for a component that does not opt in.
func TestOneFileForAMixedFleet(t *testing.T) {
	k, err := kubeletconfig.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsingleProcessOOMKill: true\nmaxPods: 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	linux := kubeletconfig.NewComponent(k)
	linux.GOOS = "linux"
	loaded, _, err := linux.Load(context.Background(), []string{"--config", file})
	if err != nil {
		t.Fatal(err)
	}
	if c := loaded.Object; c.SingleProcessOOMKill == nil || !*c.SingleProcessOOMKill || c.MaxPods != 50 || len(loaded.Skipped) != 0 {
		t.Errorf("on linux: singleProcessOOMKill %v, maxPods %d, skipped %q", c.SingleProcessOOMKill, c.MaxPods, loaded.Skipped)
	}
	windows := kubeletconfig.NewComponent(k)
	windows.GOOS = "windows"
	loaded, _, err = windows.Load(context.Background(), []string{"--config", file})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"file " + file + ": field singleProcessOOMKill is for linux only, and this system is windows"}
	if c := loaded.Object; c.SingleProcessOOMKill != nil || c.MaxPods != 50 || !slices.Equal(loaded.Skipped, want) {
		t.Errorf("on windows: singleProcessOOMKill %v, maxPods %d, skipped %q", c.SingleProcessOOMKill, c.MaxPods, loaded.Skipped)
	}
	windows.SkipForeignOS = false
	if _, _, err := windows.Load(context.Background(), []string{"--config", file}); err == nil || !strings.Contains(err.Error(), "field singleProcessOOMKill is for linux only, and this system is windows") {
		t.Errorf("on windows, not opted in: %v", err)
	}
}
