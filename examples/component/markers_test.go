package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestFieldMarkers shows the field markers on the command line: the
// instance-only hostnameOverride, the Linux-only cgroupDriver and the
// Windows-only windowsPriorityClass, and the lifecycle of v1alpha1's
// profiling (deprecated there, renamed in v1beta1) and of insecurePort
// (removed).
func TestFieldMarkers(t *testing.T) {
	dir := t.TempDir()
	shared := write(t, dir, "shared.yaml", beta+"hostnameOverride: node-a\n")
	code, out, errOut := runComponent(t, "--config", shared)
	if want := "file " + shared + ": field hostnameOverride is instance-only: set it in --instance-config or with a flag, not in a file every instance reads"; code != 1 || out != "" || !strings.Contains(errOut, want) {
		t.Errorf("instance-only in --config: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
	e := explain(t, "--config", "testdata/component.yaml", "--instance-config", "testdata/instance.yaml")
	if e.Config["hostnameOverride"] != "instance-a" || e.Provenance["/hostnameOverride"].Source != "instance-config testdata/instance.yaml" {
		t.Errorf("hostnameOverride %v from %+v, want instance-a from the instance file", e.Config["hostnameOverride"], e.Provenance["/hostnameOverride"])
	}
	e = explain(t, "--config", "testdata/component.yaml", "--hostname-override", "node-b")
	if e.Config["hostnameOverride"] != "node-b" {
		t.Errorf("--hostname-override: hostnameOverride %v", e.Config["hostnameOverride"])
	}

	// This OS's field is defaulted; the other's is neither defaulted nor
	// validated, and a file that sets it fails.
	own, other, otherOS := "cgroupDriver", "windowsPriorityClass", "windows"
	if runtime.GOOS == "windows" {
		own, other, otherOS = "windowsPriorityClass", "cgroupDriver", "linux"
	}
	e = explain(t, "--config", "testdata/component.yaml")
	if _, ok := e.Config[own]; !ok || e.Provenance["/"+own].Source != "default" {
		t.Errorf("%s is %v from %+v, want its default", own, e.Config[own], e.Provenance["/"+own])
	}
	if v, ok := e.Config[other]; ok {
		t.Errorf("%s, a field of %s, is %v on %s", other, otherOS, v, runtime.GOOS)
	}
	foreign := write(t, dir, "foreign.yaml", beta+other+": x\n")
	code, _, errOut = runComponent(t, "--config", foreign)
	if want := "file " + foreign + ": field " + other + " is for " + otherOS + " only, and this system is " + runtime.GOOS; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("a field of %s: exit %d, stderr %q; want %q", otherOS, code, errOut, want)
	}

	for _, tc := range []struct{ body, want string }{
		{beta + "profiling: false\n", `field "profiling" was renamed to "enableProfiling" in v0.3`},
		{beta + "insecurePort: 8080\n", `field "insecurePort" was removed in v0.3: the component serves TLS only, on port`},
	} {
		f := write(t, dir, "lifecycle.yaml", tc.body)
		if code, _, errOut := runComponent(t, "--config", f); code != 1 || !strings.Contains(errOut, f+": "+tc.want) {
			t.Errorf("exit %d, stderr %q; want %q", code, errOut, tc.want)
		}
	}
	code, _, errOut = runComponent(t, "--config", "testdata/component-v1alpha1.yaml")
	if want := `warning: testdata/component-v1alpha1.yaml: field "profiling" is deprecated since v0.3: v1beta1 calls it enableProfiling; --migrate-config rewrites the file`; code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("v1alpha1's profiling: exit %d, stderr %q; want %q", code, errOut, want)
	}
}

// TestDeclarativeValidation: the rules written as +k8s: tags on v1beta1's
// fields (validation-gen) run on the merged configuration, each error
// naming the layer that set the field.
func TestDeclarativeValidation(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", write(t, dir, "port.yaml", beta+"port: 0\n")}, "port.yaml: port: Invalid value: 0: must be greater than or equal to 1"},
		{[]string{"--config", write(t, dir, "ok.yaml", beta), "--hostname-override", "Not_A_Host"}, `flag --hostname-override: hostnameOverride: Invalid value: "Not_A_Host": a lowercase RFC 1123 subdomain`},
		{[]string{"--config", write(t, dir, "driver.yaml", beta+"cgroupDriver: sometimes\n")}, `driver.yaml: cgroupDriver: Unsupported value: "sometimes": supported values: "cgroupfs", "systemd"`},
		{[]string{"--config", write(t, dir, "burst.yaml", beta+"clientConnection:\n  burst: -1\n")}, "burst.yaml: clientConnection.burst: Invalid value: -1: must be greater than or equal to 0"},
	} {
		code, _, errOut := runComponent(t, tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
