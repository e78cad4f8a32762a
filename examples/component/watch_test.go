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

	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/zpages"
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
	_, body := getAs(t, url, "")
	return body
}

// getAs gets url with the Accept header accept and returns the response's
// Content-Type and body; a status other than 200 is reported as
// "STATUS: BODY".
func getAs(t *testing.T, url, accept string) (string, string) {
	t.Helper()
	code, ct, body := watchtest.Get(t, url, accept)
	if code != http.StatusOK {
		return ct, fmt.Sprintf("%d: %s", code, body)
	}
	return ct, body
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !watchtest.Until(10*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestWatch runs the component with --watch on two ConfigMap mounts, one
// holding --config and one --config-dir, which kubelet's AtomicWriter
// updates; its server answers behind idle and half-sent connections.
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
	// A client holding idle and half-sent connections does not keep a
	// probe from /statusz.
	httpservetest.Siege(t, fmt.Sprintf("127.0.0.1:%d", port), nil, "/statusz", http.StatusOK)
	// /configz answers component-base's configz JSON by default.
	configz := func() map[string]any {
		var m map[string]map[string]any
		if err := json.Unmarshal([]byte(get(t, base+"/configz")), &m); err != nil {
			t.Fatal(err)
		}
		return m["component"]
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

	checkZPages(t, base, cfgMount+"/component.yaml")

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

// checkZPages reads the z-pages of TestWatch's component after its last
// reload was refused: each value's source, the flags as set, the status,
// and what the pages refuse.
func checkZPages(t *testing.T, base, file string) {
	t.Helper()
	ct, body := getAs(t, base+"/configz", "application/json;as=Configz;v=v1alpha1;g=zpages.strata.dev")
	var cz zpages.Configz
	if err := json.Unmarshal([]byte(body), &cz); err != nil || ct != "application/json;g=zpages.strata.dev;v=v1alpha1;as=Configz" {
		t.Fatalf("strata's Configz: %v, Content-Type %q\n%s", err, ct, body)
	}
	c := cz.Configurations["component"]
	if c.Sources["/enableProfiling"].Source != "file "+file || c.Sources["/syncFrequency"].Source != "running restart required" || c.Sources["/clientConnection/qps"].Source != "default" {
		t.Errorf("sources: %+v", c.Sources)
	}
	if _, text := getAs(t, base+"/configz", "text/plain"); !strings.Contains(text, "/enableProfiling=false (file "+file+")") || !strings.Contains(text, "\ncomponent configz\nWarning: ") {
		t.Errorf("/configz as text:\n%s", text)
	}

	_, text := getAs(t, base+"/flagz", "")
	for _, want := range []string{"\ncomponent flagz\nWarning: This endpoint is not meant to be machine parseable", "\nwatch=true (command line)\n", "\nport=10250 (default, sets /port)\n", "\nconfig=" + file + " (command line)\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("/flagz lacks %q:\n%s", want, text)
		}
	}
	ct, body = getAs(t, base+"/flagz", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io")
	var kf struct {
		APIVersion string            `json:"apiVersion"`
		Flags      map[string]string `json:"flags"`
	}
	if err := json.Unmarshal([]byte(body), &kf); err != nil || kf.APIVersion != "config.k8s.io/v1beta1" || kf.Flags["poll-interval"] != "1h0m0s" {
		t.Errorf("Kubernetes' Flagz (%s): %v\n%s", ct, err, body)
	}
	ct, body = getAs(t, base+"/flagz", "application/yaml;as=Flagz;v=v1alpha1;g=zpages.strata.dev")
	if !strings.Contains(body, "port:\n    key: /port\n    set: false\n    value: \"10250\"") {
		t.Errorf("strata's Flagz as YAML (%s):\n%s", ct, body)
	}

	_, text = getAs(t, base+"/statusz", "")
	for _, want := range []string{"\ncomponent statusz\n", "\nPaths: /configz /flagz /statusz\n", "\nRestart required: /syncFrequency\n", "\nLast reload refused: ", "\nConfiguration sources: file " + file + ", drop-in "} {
		if !strings.Contains(text, want) {
			t.Errorf("/statusz lacks %q:\n%s", want, text)
		}
	}
	_, body = getAs(t, base+"/statusz", "application/json;as=Statusz;v=v1alpha1;g=zpages.strata.dev")
	if !strings.Contains(body, `"restartRequired":["/syncFrequency"]`) || !strings.Contains(body, `"goVersion":"go`) {
		t.Errorf("strata's Statusz:\n%s", body)
	}

	if _, body := getAs(t, base+"/flagz", "application/xml"); !strings.HasPrefix(body, "406: ") || !strings.Contains(body, "NotAcceptable") {
		t.Errorf("application/xml: %s", body)
	}
	resp, err := http.Post(base+"/configz", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /configz: %s", resp.Status)
	}
}
