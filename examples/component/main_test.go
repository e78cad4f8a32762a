package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

const beta = "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n"

// runComponent runs the command and returns its exit code and output.
func runComponent(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

type explanation struct {
	Config     map[string]any `json:"config"`
	Provenance map[string]struct {
		Source   string   `json:"source"`
		Shadowed []string `json:"shadowed"`
		Removed  bool     `json:"removed"`
		Replaced []string `json:"replaced"`
	} `json:"provenance"`
}

func explain(t *testing.T, args ...string) explanation {
	t.Helper()
	code, out, errOut := runComponent(t, append(args, "--explain")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var e explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("--explain printed no JSON: %v\n%s", err, out)
	}
	return e
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShippedExample(t *testing.T) {
	e := explain(t, "--config", "testdata/component.yaml")
	abs, _ := filepath.Abs("testdata/certs/serving.crt")
	if e.Config["port"] != 9443.0 || e.Config["tlsCertFile"] != abs || e.Config["enableProfiling"] != true {
		t.Errorf("config = %v", e.Config)
	}
	if p := e.Provenance["/port"]; p.Source != "file testdata/component.yaml" {
		t.Errorf("/port provenance = %+v", p)
	}
	if p := e.Provenance["/enableProfiling"]; p.Source != "default" {
		t.Errorf("/enableProfiling provenance = %+v, want default", p)
	}
}

func TestExplicitFalseAndZeroSurviveEveryLayer(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta+"enableProfiling: true\nfeatureGates: {BetaThing: true}\n")
	write(t, dir, "d/10.yaml", "enableProfiling: false\nfeatureGates: {BetaThing: false}\n")
	write(t, dir, "d/20.yaml", beta+"port: 9000\n")
	inst := write(t, dir, "instance.yaml", beta+"enableProfiling: true\n")

	e := explain(t, "--config", cfg, "--config-dir", filepath.Join(dir, "d"))
	if e.Config["enableProfiling"] != false || e.Config["featureGates"].(map[string]any)["BetaThing"] != false {
		t.Errorf("a drop-in's explicit false lost: %v", e.Config)
	}
	e = explain(t, "--config", cfg, "--config-dir", filepath.Join(dir, "d"), "--instance-config", inst, "--enable-profiling=false")
	if e.Config["enableProfiling"] != false {
		t.Errorf("--enable-profiling=false lost: %v", e.Config)
	}
	want := []string{"instance-config " + inst, "drop-in " + filepath.Join(dir, "d/10.yaml"), "file " + cfg}
	if p := e.Provenance["/enableProfiling"]; p.Source != "flag --enable-profiling" || strings.Join(p.Shadowed, "|") != strings.Join(want, "|") {
		t.Errorf("/enableProfiling provenance = %+v, want the flag shadowing %v", p, want)
	}
	// Zero: a v1alpha1 drop-in sets profiling: false over a v1beta1 file
	// that sets it true; and explicit zero verbosity over the file's 4.
	cfg2 := write(t, dir, "c2.yaml", beta+"enableProfiling: true\nlogging: {verbosity: 4}\n")
	write(t, dir, "d2/10.yaml", "apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nprofiling: false\nlogging: {verbosity: 0}\n")
	e = explain(t, "--config", cfg2, "--config-dir", filepath.Join(dir, "d2"))
	if e.Config["enableProfiling"] != false || e.Config["logging"].(map[string]any)["verbosity"] != 0.0 {
		t.Errorf("a v1alpha1 drop-in's explicit false and 0 lost: %v", e.Config)
	}
	// A v1alpha1 drop-in that does not mention profiling leaves it alone.
	write(t, dir, "d3/10.yaml", "apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nport: 1000\n")
	e = explain(t, "--config", cfg2, "--config-dir", filepath.Join(dir, "d3"))
	if e.Config["enableProfiling"] != true || e.Config["port"] != 1000.0 {
		t.Errorf("a v1alpha1 drop-in changed a field it does not set: %v", e.Config)
	}
}

func TestFlagsWinOnlyWhenSet(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta+"port: 9000\nenableProfiling: false\n")
	e := explain(t, "--config", cfg)
	if e.Config["port"] != 9000.0 || e.Config["enableProfiling"] != false {
		t.Errorf("an unset flag overrode the file: %v", e.Config)
	}
	e = explain(t, "--config", cfg, "--port", "9001")
	if e.Config["port"] != 9001.0 || e.Provenance["/port"].Source != "flag --port" {
		t.Errorf("--port did not win: %v %+v", e.Config["port"], e.Provenance["/port"])
	}
	// With no --config, the flag's legacy default applies, and says so.
	e = explain(t)
	if e.Config["port"] != 10250.0 || e.Provenance["/port"].Source != "legacy-default --port" {
		t.Errorf("without --config: port %v from %+v, want the legacy default 10250", e.Config["port"], e.Provenance["/port"])
	}
}

func TestFeatureGatesMergePerKey(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta+"featureGates: {AlphaThing: true, BetaThing: false}\n")
	e := explain(t, "--config", cfg, "--feature-gates", "BetaThing=true")
	gates := e.Config["featureGates"].(map[string]any)
	if gates["AlphaThing"] != true || gates["BetaThing"] != true {
		t.Errorf("featureGates = %v, want AlphaThing from the file and BetaThing from the flag", gates)
	}
	if e.Provenance["/featureGates/AlphaThing"].Source != "file "+cfg || e.Provenance["/featureGates/BetaThing"].Source != "flag --feature-gates" {
		t.Errorf("provenance = %+v", e.Provenance)
	}
	code, _, errOut := runComponent(t, "--config", cfg, "--feature-gates", "NoSuchThing=true")
	if code == 0 || !strings.Contains(errOut, "flag --feature-gates: featureGates[NoSuchThing]") || !strings.Contains(errOut, "unrecognized feature gate") {
		t.Errorf("unknown gate: exit %d, %s", code, errOut)
	}
	code, _, errOut = runComponent(t, "--config", write(t, dir, "l.yaml", beta+"featureGates: {GAThing: false}\n"))
	if code == 0 || !strings.Contains(errOut, "l.yaml: featureGates[GAThing]") || !strings.Contains(errOut, "locked") {
		t.Errorf("locked gate: exit %d, %s", code, errOut)
	}
}

// TestGatedField: alphaThingMaxItems needs the AlphaThing feature gate
// (`strata:"feature-gate=AlphaThing"`). Set while the gate is off, by its
// default or by a layer above, it is an error naming the layer, the field
// and the gate; on by --feature-gates or by the files' featureGates, it
// applies.
func TestGatedField(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta+"alphaThingMaxItems: 5\n")
	code, _, errOut := runComponent(t, "--config", cfg, "--explain")
	if code == 0 || !strings.Contains(errOut, "file "+cfg+": alphaThingMaxItems: Forbidden: needs feature gate AlphaThing, which is off") {
		t.Errorf("gate off by default: exit %d, %s", code, errOut)
	}
	if e := explain(t, "--config", cfg, "--feature-gates", "AlphaThing=true"); e.Config["alphaThingMaxItems"] != 5.0 {
		t.Errorf("gate on by the flag: alphaThingMaxItems = %v, want 5", e.Config["alphaThingMaxItems"])
	}
	on := write(t, dir, "on.yaml", beta+"featureGates: {AlphaThing: true}\nalphaThingMaxItems: 5\n")
	if e := explain(t, "--config", on); e.Config["alphaThingMaxItems"] != 5.0 {
		t.Errorf("gate on in the file: alphaThingMaxItems = %v, want 5", e.Config["alphaThingMaxItems"])
	}
	write(t, dir, "conf.d/90-off.yaml", "featureGates: {AlphaThing: false}\n")
	code, _, errOut = runComponent(t, "--config", on, "--config-dir", filepath.Join(dir, "conf.d"), "--explain")
	if code == 0 || !strings.Contains(errOut, "file "+on+": alphaThingMaxItems: Forbidden: needs feature gate AlphaThing, which is off") {
		t.Errorf("gate turned off by a drop-in: exit %d, %s", code, errOut)
	}
	none := write(t, dir, "none.yaml", beta)
	if e := explain(t, "--config", none); e.Config["alphaThingMaxItems"] != nil {
		t.Errorf("unset, gate off: alphaThingMaxItems = %v, want it unset", e.Config["alphaThingMaxItems"])
	}
	// What the component prints loads again, the gate still off.
	code, printed, errOut := runComponent(t, "--config", none, "--print-config")
	if code != 0 || strings.Contains(printed, "alphaThingMaxItems") {
		t.Fatalf("--print-config: exit %d, %s%s", code, printed, errOut)
	}
	if code, _, errOut := runComponent(t, "--config", write(t, dir, "printed.yaml", printed), "--explain"); code != 0 {
		t.Errorf("the printed configuration does not load again: exit %d, %s", code, errOut)
	}
}

func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "etc/c.yaml", beta+"tlsCertFile: certs/a.crt\nclientConnection: {kubeconfig: kube/config}\n")
	write(t, dir, "etc/conf.d/sub/../10.yaml", "tlsCertFile: drop/b.crt\n")
	e := explain(t, "--config", cfg, "--config-dir", filepath.Join(dir, "etc/conf.d"))
	if e.Config["tlsCertFile"] != filepath.Join(dir, "etc/conf.d/drop/b.crt") {
		t.Errorf("drop-in path = %v, want it resolved against the drop-in's directory", e.Config["tlsCertFile"])
	}
	if got := e.Config["clientConnection"].(map[string]any)["kubeconfig"]; got != filepath.Join(dir, "etc/kube/config") {
		t.Errorf("kubeconfig = %v, want it resolved against the file's directory", got)
	}
	wd, _ := os.Getwd()
	e = explain(t, "--config", cfg, "--tls-cert-file", "flag.crt")
	if e.Config["tlsCertFile"] != filepath.Join(wd, "flag.crt") {
		t.Errorf("flag path = %v, want it resolved against the working directory", e.Config["tlsCertFile"])
	}
}

// TestV1alpha1KeepsItsDefaults loads a v1alpha1 file and a v1beta1 file
// that set no port: each serves on its own version's default, v1alpha1's
// 8080 and v1beta1's 8443, though layers merge in v1beta1, and --explain
// says which version's default applied.
func TestV1alpha1KeepsItsDefaults(t *testing.T) {
	dir := t.TempDir()
	old := write(t, dir, "old.yaml", "apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\n")
	cur := write(t, dir, "new.yaml", beta)
	for _, tc := range []struct {
		file, source string
		port         float64
	}{
		{old, "default component.example.strata.dev/v1alpha1", 8080},
		{cur, "default", 8443},
	} {
		e := explain(t, "--config", tc.file)
		if e.Config["port"] != tc.port || e.Provenance["/port"].Source != tc.source {
			t.Errorf("%s: port %v set by %q, want %v set by %q", tc.file, e.Config["port"], e.Provenance["/port"].Source, tc.port, tc.source)
		}
	}
	// A v1beta1 drop-in brings only what it sets: the v1alpha1 file's
	// default stays.
	write(t, dir, "d/10.yaml", beta+"syncFrequency: 2m\n")
	if e := explain(t, "--config", old, "--config-dir", filepath.Join(dir, "d")); e.Config["port"] != 8080.0 {
		t.Errorf("with a v1beta1 drop-in: port %v, want 8080", e.Config["port"])
	}
}

// TestMigrateConfig migrates the v1alpha1 example file to v1beta1: what
// it sets and nothing else, profiling under its new name, relative paths
// as written; no defaults and no flags.
func TestMigrateConfig(t *testing.T) {
	code, out, errOut := runComponent(t, "--config", "testdata/component-v1alpha1.yaml", "--migrate-config", "--port", "1")
	want := `apiVersion: component.example.strata.dev/v1beta1
clientConnection:
  kubeconfig: kubeconfig
  qps: 20
enableProfiling: false
featureGates:
  AlphaThing: true
kind: ComponentConfiguration
port: 9443
syncFrequency: 30s
tlsCertFile: certs/serving.crt
`
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errOut, out, want)
	}
}

// TestMigrationKeepsMeaning migrates files between every pair of the
// example's versions and checks that --explain's configuration of the
// migrated file is the original's: a v1alpha1 file that leaves the port
// to defaulting (8080 in v1alpha1) keeps port 8080 in v1beta1 (which
// defaults it to 8443), and a v1beta1 file keeps 8443 in v1alpha1.
func TestMigrationKeepsMeaning(t *testing.T) {
	dir := t.TempDir()
	shipped, err := os.ReadFile("testdata/component-v1alpha1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"shipped-v1alpha1.yaml":   string(shipped),
		"profiling-v1alpha1.yaml": "apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nprofiling: false\n",
		"bare-v1beta1.yaml":       beta + "enableProfiling: true\n",
		"port-v1beta1.yaml":       beta + "port: 9000\nsyncFrequency: 2m\n",
	}
	explain := func(t *testing.T, path string) map[string]any {
		t.Helper()
		code, out, errOut := runComponent(t, "--config", path, "--explain")
		if code != 0 {
			t.Fatalf("--explain %s: exit %d: %s", path, code, errOut)
		}
		var e explanation
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatal(err)
		}
		return e.Config
	}
	for name, content := range files {
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			t.Run(name+" to "+version, func(t *testing.T) {
				orig := write(t, dir, name, content)
				code, out, errOut := runComponent(t, "--config", orig, "--migrate-config", "--output-version", version)
				if code != 0 || !strings.Contains(out, "apiVersion: component.example.strata.dev/"+version) {
					t.Fatalf("exit %d, stderr %s, stdout:\n%s", code, errOut, out)
				}
				migrated := write(t, dir, "migrated-"+version+"-"+name, out)
				before, after := explain(t, orig), explain(t, migrated)
				if !reflect.DeepEqual(before, after) {
					b, _ := json.MarshalIndent(before, "", " ")
					a, _ := json.MarshalIndent(after, "", " ")
					t.Errorf("the migrated file means something else:\n%s\nwas\n%s\n(migrated: %s; stderr %s)", a, b, out, errOut)
				}
			})
		}
	}
	profiling := write(t, dir, "profiling-v1alpha1.yaml", files["profiling-v1alpha1.yaml"])
	code, out, errOut := runComponent(t, "--config", profiling, "--migrate-config")
	if code != 0 || !strings.Contains(out, "port: 8080") || !strings.Contains(errOut, "keeps port: 8080 (the target version would default it to 8443)") {
		t.Errorf("profiling: false in v1alpha1: exit %d, stdout\n%s\nstderr %s", code, out, errOut)
	}
}

// TestExplainUpgrade previews the upgrade of a v1alpha1 file to v1beta1,
// whose default port differs: the port changes, with both values and
// sources, unless a flag sets it; and the preview agrees with what the
// file rewritten as v1beta1 loads to.
func TestExplainUpgrade(t *testing.T) {
	dir := t.TempDir()
	alpha := "apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nprofiling: false\n"
	file := write(t, dir, "alpha.yaml", alpha)
	type change struct {
		Key            string          `json:"key"`
		Value          json.RawMessage `json:"value"`
		Source         string          `json:"source"`
		Upgraded       json.RawMessage `json:"upgraded"`
		UpgradedSource string          `json:"upgradedSource"`
	}
	preview := func(t *testing.T, args ...string) []change {
		t.Helper()
		code, out, errOut := runComponent(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var p struct {
			To      string   `json:"to"`
			Changes []change `json:"changes"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil || p.To != "component.example.strata.dev/"+args[len(args)-1] {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return p.Changes
	}
	got := preview(t, "--config", file, "--explain-upgrade", "v1beta1")
	want := []change{{Key: "port", Value: json.RawMessage("8080"), Source: "default component.example.strata.dev/v1alpha1", Upgraded: json.RawMessage("8443"), UpgradedSource: "default"}}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Fatalf("preview %s, want %s", g, w)
	}
	// What the upgrade gives, loaded: the preview said so.
	upgraded := write(t, dir, "upgraded.yaml", strings.Replace(strings.Replace(alpha, "v1alpha1", "v1beta1", 1), "profiling:", "enableProfiling:", 1))
	if port := explain(t, "--config", upgraded).Config["port"]; port != float64(8443) {
		t.Errorf("the upgraded file serves %v", port)
	}
	// A flag sets the port: the upgrade changes nothing.
	if got := preview(t, "--config", file, "--port", "9000", "--explain-upgrade", "v1beta1"); len(got) != 0 {
		t.Errorf("with --port: %v", got)
	}
	// To its own version: nothing.
	if got := preview(t, "--config", file, "--explain-upgrade", "v1alpha1"); len(got) != 0 {
		t.Errorf("to v1alpha1: %v", got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--explain-upgrade", "v1beta1"}, "--explain-upgrade previews the upgrade of the --config file: give one"},
		{[]string{"--config", file, "--explain-upgrade", "v1beta1", "--explain"}, "--explain-upgrade prints what an upgrade would change, and nothing else: give it alone"},
		{[]string{"--config", file, "--explain-upgrade", "v9"}, `--explain-upgrade "v9": not a version of ComponentConfiguration`},
	} {
		if code, _, errOut := runComponent(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %s", c.args, code, errOut)
		}
	}
}

func TestPrintConfigConvertsV1alpha1(t *testing.T) {
	code, out, errOut := runComponent(t, "--config", "testdata/component-v1alpha1.yaml", "--print-config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"apiVersion: component.example.strata.dev/v1beta1", "enableProfiling: false", "port: 9443"} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-config output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "deprecated") {
		t.Errorf("no deprecation warning on stderr: %q", errOut)
	}
	code, out, _ = runComponent(t, "--config", "testdata/component.yaml", "--print-config", "--output-version", "v1alpha1")
	if code != 0 || !strings.Contains(out, "profiling: true") || !strings.Contains(out, "v1alpha1") {
		t.Errorf("--output-version v1alpha1: exit %d\n%s", code, out)
	}
}

func TestDecodeModeFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta+"port: 9000\nbogus: 1\nport: 9001\n")
	code, out, errOut := runComponent(t, "--config", cfg, "--explain")
	if code == 0 || out != "" || !strings.Contains(errOut, cfg+`: duplicate field "port"`) {
		t.Errorf("strict: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runComponent(t, "--config", cfg, "--decode-mode", "warn", "--explain")
	if code != 0 || !strings.Contains(errOut, `warning: `+cfg+`: duplicate field "port"`) {
		t.Errorf("warn: exit %d, stderr %q", code, errOut)
	}
	cfg2 := write(t, dir, "c2.yaml", beta+"port: 9000\nbogus: 1\n")
	code, _, errOut = runComponent(t, "--config", cfg2, "--decode-mode", "warn")
	if code != 0 || !strings.Contains(errOut, `unknown field "bogus"`) {
		t.Errorf("warn unknown: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut = runComponent(t, "--config", cfg2, "--decode-mode", "ignore"); code != 0 || strings.Contains(errOut, "bogus") {
		t.Errorf("ignore: exit %d, stderr %q", code, errOut)
	}
}

func TestBadInputFailsClearly(t *testing.T) {
	dir := t.TempDir()
	big := write(t, dir, "big.yaml", beta+"tlsCertFile: "+strings.Repeat("x", 5<<20)+"\n")
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	bomb := "a: &a [x,x,x,x,x,x,x,x,x]\n"
	for i, p := range "bcdefghi" {
		prev := string("abcdefghi"[i])
		bomb += string(p) + ": &" + string(p) + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"empty file", []string{"--config", write(t, dir, "empty.yaml", "")}, "empty.yaml: the input is empty"},
		{"missing file", []string{"--config", filepath.Join(dir, "nope.yaml")}, "nope.yaml: no such file or directory"},
		{"unreadable file", []string{"--config", dir}, "is a directory, not a regular file"},
		{"a FIFO", []string{"--config", fifo}, "fifo.yaml is a named pipe (FIFO), not a regular file"},
		{"a device", []string{"--config", "/dev/zero"}, "/dev/zero is a character device, not a regular file"},
		{"binary garbage", []string{"--config", write(t, dir, "bin.yaml", "\x7fELF\x02\x01\x01\x00\x00")}, "bin.yaml: not valid YAML"},
		{"wrong kind", []string{"--config", write(t, dir, "kind.yaml", "apiVersion: v1\nkind: ConfigMap\n")}, "kind.yaml: apiVersion v1 is not in group component.example.strata.dev"},
		{"wrong type", []string{"--config", write(t, dir, "type.yaml", beta+"port: eighty\n")}, "type.yaml: "},
		{"oversize", []string{"--config", big}, "big.yaml: the file is over the limit of 4194304 bytes"},
		{"alias bomb", []string{"--config", write(t, dir, "bomb.yaml", bomb)}, "bomb.yaml: the YAML document is an alias bomb: aliases expand the document to more than"},
		{"removed version", []string{"--config", write(t, dir, "old.yaml", "apiVersion: component.example.strata.dev/v1alpha0\nkind: ComponentConfiguration\n")}, "to migrate, run"},
		{"invalid value", []string{"--config", write(t, dir, "port.yaml", beta+"port: 70000\n")}, "port.yaml: port: Invalid value: 70000: must be less than or equal to 65535"},
		{"invalid flag value", []string{"--config", write(t, dir, "ok.yaml", beta), "--port", "0"}, "flag --port: port: Invalid value: 0"},
		{"bad drop-in", []string{"--config", write(t, dir, "ok2.yaml", beta), "--config-dir", filepath.Dir(write(t, dir, "dd/10.yaml", "port: [1]\n"))}, "dd/10.yaml: "},
		{"unknown flag", []string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runComponent(t, append(tc.args, "--explain")...)
			if code == 0 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want a failure saying %q and nothing on stdout", code, out, errOut, tc.want)
			}
		})
	}
}

func TestHelpListsOnlyOwnFlags(t *testing.T) {
	code, out, _ := runComponent(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"Config flags:", "Generic flags:", "Logging flags:", "--feature-gates", "--config-dir", "--instance-config", "--vmodule"} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	for _, leak := range []string{"--test.", "--log_dir", "--alsologtostderr"} {
		if strings.Contains(out, leak) {
			t.Errorf("usage lists a global flag %q", leak)
		}
	}
	if code, _, errOut := runComponent(t, "--test.v"); code != 2 || !strings.Contains(errOut, "unknown flag") {
		t.Errorf("a global testing flag parsed: exit %d, %s", code, errOut)
	}
}

// TestPollIntervalIsChecked gives --watch a poll interval that would busy
// poll, or silently become the default: a usage error, exit 2.
func TestPollIntervalIsChecked(t *testing.T) {
	cfg := write(t, t.TempDir(), "c.yaml", beta)
	for _, d := range []string{"1ns", "-1s", "0s"} {
		code, _, errOut := runComponent(t, "--config", cfg, "--watch", "--poll-interval", d)
		if code != 2 || !strings.Contains(errOut, "--poll-interval "+d) || !strings.Contains(errOut, "must be at least 10ms") {
			t.Errorf("--poll-interval %s: exit %d, stderr %q; want 2 and a message", d, code, errOut)
		}
	}
}

// TestNullLeavesATrace removes, in a drop-in, the feature gates the file
// set: --explain says which layer removed them and what it erased.
func TestNullLeavesATrace(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta+"featureGates: {AlphaThing: true, BetaThing: false}\n")
	write(t, dir, "conf.d/10-reset.yaml", "featureGates: null\n")
	e := explain(t, "--config", cfg, "--config-dir", filepath.Join(dir, "conf.d"))
	if _, ok := e.Config["featureGates"]; ok {
		t.Errorf("featureGates still set: %v", e.Config["featureGates"])
	}
	p := e.Provenance["/featureGates"]
	want := []string{"/featureGates/AlphaThing from file " + cfg, "/featureGates/BetaThing from file " + cfg}
	if !p.Removed || p.Source != "drop-in "+filepath.Join(dir, "conf.d", "10-reset.yaml") || strings.Join(p.Replaced, "|") != strings.Join(want, "|") {
		t.Errorf("provenance of /featureGates: %+v", p)
	}
}

// TestDropInOfTwoDocumentsIsRefused: a drop-in that names neither
// apiVersion nor kind and holds two YAML documents is bad input, as the
// same drop-in with apiVersion and kind is ("holds 2 documents"). Its
// second document must not be dropped without a word, nor its unknown
// fields pass strict decoding.
func TestDropInOfTwoDocumentsIsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta)
	for name, content := range map[string]string{
		"second document":       "port: 1\n---\nport: 2\n",
		"unknown field in it":   "port: 1\n---\nbogus: 2\n",
		"another kind after it": "port: 1\n---\napiVersion: v1\nkind: ConfigMap\n",
	} {
		t.Run(name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "conf.d")
			write(t, d, "10.yaml", content)
			code, out, errOut := runComponent(t, "--config", cfg, "--config-dir", d, "--explain")
			if code == 0 || out != "" || !strings.Contains(errOut, filepath.Join(d, "10.yaml")) {
				t.Errorf("exit %d, stdout %d bytes, stderr %q; want a failure naming %s and nothing on stdout", code, len(out), errOut, filepath.Join(d, "10.yaml"))
			}
		})
	}
}

// TestDropInDuplicateFieldInJSON: a duplicate field is an error in strict
// mode and a warning in warn mode, in a JSON drop-in that names neither
// apiVersion nor kind as in any other file.
func TestDropInDuplicateFieldInJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "c.yaml", beta)
	write(t, dir, "conf.d/10.json", `{"port": 1, "port": 2}`)
	code, out, errOut := runComponent(t, "--config", cfg, "--config-dir", filepath.Join(dir, "conf.d"), "--explain")
	if code == 0 || out != "" || !strings.Contains(errOut, `duplicate field "port"`) {
		t.Errorf("strict: exit %d, stdout %d bytes, stderr %q; want a duplicate field error", code, len(out), errOut)
	}
	code, _, errOut = runComponent(t, "--config", cfg, "--config-dir", filepath.Join(dir, "conf.d"), "--decode-mode", "warn", "--explain")
	if code != 0 || !strings.Contains(errOut, `duplicate field "port"`) {
		t.Errorf("warn: exit %d, stderr %q; want a duplicate field warning", code, errOut)
	}
}

// TestBadDecodeModeIsAUsageError: --decode-mode takes strict, warn or
// ignore; another value is a command line that does not parse, exit 2
// with the usage, as a bad --output-version is.
func TestBadDecodeModeIsAUsageError(t *testing.T) {
	cfg := write(t, t.TempDir(), "c.yaml", beta)
	code, out, errOut := runComponent(t, "--config", cfg, "--decode-mode", "bogus", "--print-config")
	if code != 2 || out != "" || !strings.Contains(errOut, "--decode-mode") || !strings.Contains(errOut, "Usage:") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 with the usage", code, out, errOut)
	}
}

// TestExplainWithPrintConfigIsAUsageError: --explain prints JSON,
// --print-config YAML; asked for both, the command must not print one and
// silently skip the other with exit 0 (as --explain --write-config-to is
// refused).
func TestExplainWithPrintConfigIsAUsageError(t *testing.T) {
	cfg := write(t, t.TempDir(), "c.yaml", beta)
	code, out, errOut := runComponent(t, "--config", cfg, "--explain", "--print-config")
	if code != 2 || out != "" {
		t.Errorf("exit %d, stdout %.80q, stderr %.200q; want a usage error (exit 2) and nothing on stdout", code, out, errOut)
	}
}

// TestMigrateConfigWarns: with --decode-mode warn, what the decoder
// leaves out of a file (a duplicate, a renamed field) is said on stderr,
// as --print-config says it, not dropped from the migration silently.
func TestMigrateConfigWarns(t *testing.T) {
	cfg := write(t, t.TempDir(), "c.yaml", beta+"profiling: false\nport: 1\nport: 2\n")
	code, _, errOut := runComponent(t, "--config", cfg, "--migrate-config", "--decode-mode", "warn", "--output-version", "v1alpha1")
	if code != 0 || !strings.Contains(errOut, `duplicate field "port"`) || !strings.Contains(errOut, `field "profiling" was renamed`) {
		t.Errorf("exit %d, stderr %q; want the decoding warnings", code, errOut)
	}
}

// TestFlowStyleYAMLFile: a .yaml file written in YAML flow style is YAML;
// it decodes as the same file in block style does.
func TestFlowStyleYAMLFile(t *testing.T) {
	cfg := write(t, t.TempDir(), "c.yaml", "{apiVersion: component.example.strata.dev/v1beta1, kind: ComponentConfiguration, port: 9001}\n")
	code, out, errOut := runComponent(t, "--config", cfg, "--explain")
	if code != 0 || !strings.Contains(out, `"port": 9001`) {
		t.Errorf("exit %d, stderr %q; want port 9001", code, errOut)
	}
}
