package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWatch runs the component with --watch on two ConfigMap mounts, one
// holding --config and one --config-dir, which kubelet's AtomicWriter
// updates.
func TestWatch(t *testing.T) {
	port := freePort(t)
	cfgMount, dropMount := t.TempDir(), t.TempDir()
	cfgWriter := watchtest.NewKubeletWriter(t, cfgMount)
	dropWriter := watchtest.NewKubeletWriter(t, dropMount)
	cfgWriter.Write(t, map[string]string{"component.yaml": fmt.Sprintf("%sport: %d\nenableProfiling: true\n", beta, port)})
	dropWriter.Write(t, map[string]string{"10-gates.yaml": "featureGates:\n  BetaThing: false\n"})

	stderr := &watchtest.Buffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--config", cfgMount + "/component.yaml", "--config-dir", dropMount, "--watch", "--poll-interval", "1h"}, io.Discard, stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	}()
	eventually(t, "the server", func() bool { return strings.Contains(stderr.String(), "serving /configz") })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	configz := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(get(t, base+"/configz")), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	c := configz()
	if c["apiVersion"] != "component.example.strata.dev/v1beta1" || c["enableProfiling"] != true || c["syncFrequency"] != "1m0s" {
		t.Fatalf("/configz = %v", c)
	}
	if g := c["featureGates"].(map[string]any); g["BetaThing"] != false {
		t.Fatalf("drop-in not applied: %v", c)
	}

	// A live field changes.
	off := map[string]string{"component.yaml": fmt.Sprintf("%sport: %d\nenableProfiling: false\n", beta, port)}
	cfgWriter.Write(t, off)
	eventually(t, "profiling off", func() bool { return configz()["enableProfiling"] == false })

	// The drop-in directory changes.
	dropWriter.Write(t, map[string]string{"10-gates.yaml": "featureGates:\n  BetaThing: true\n", "20-more.yaml": "allowedOrigins: [https://example.com]\n"})
	eventually(t, "the drop-ins", func() bool {
		c := configz()
		return c["featureGates"].(map[string]any)["BetaThing"] == true && c["allowedOrigins"] != nil
	})

	// A restart-only field is not applied; the log says a restart is needed.
	cfgWriter.Write(t, map[string]string{"component.yaml": fmt.Sprintf("%sport: %d\nenableProfiling: false\nsyncFrequency: 5m\n", beta, port)})
	eventually(t, "the restart notice", func() bool {
		return strings.Contains(stderr.String(), "restart required to apply /syncFrequency")
	})
	if c := configz(); c["syncFrequency"] != "1m0s" {
		t.Fatalf("syncFrequency applied live: %v", c)
	}

	// An invalid file is refused; the running configuration stays.
	cfgWriter.Write(t, map[string]string{"component.yaml": beta + "enableProfiling: maybe\n"})
	eventually(t, "the refusal", func() bool { return strings.Contains(stderr.String(), "reload refused") })
	if c := configz(); c["enableProfiling"] != false {
		t.Fatalf("after a refused reload: %v", c)
	}
	if !strings.Contains(stderr.String(), "component.yaml") {
		t.Fatalf("the refusal does not name the file: %s", stderr.String())
	}

	m := get(t, base+"/metrics")
	for _, want := range []string{`example_component_automatic_reloads_total{status="failure"} 1`, `example_component_last_config_info{hash="sha256:`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, m)
		}
	}
}

func TestWatchRefusesInvalidStart(t *testing.T) {
	code, _, errOut := runComponent(t, "--config-dir", t.TempDir(), "--feature-gates", "Nope=true", "--watch")
	if code != 1 || !strings.Contains(errOut, "Nope") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestWatchNeedsAFile(t *testing.T) {
	code, _, errOut := runComponent(t, "--watch")
	if code != 2 || !strings.Contains(errOut, "--watch needs --config") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
