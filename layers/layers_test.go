package layers_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	config "github.com/stratacfg/strata/internal/testkind/component"
	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/watch"
)

func component(t testing.TB) *layers.Component[*config.ComponentConfiguration] {
	t.Helper()
	c, err := newComponent()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newComponent is the example component of this package's tests: two
// flags, one converted from its text, one bound to the map it fills.
func newComponent() (*layers.Component[*config.ComponentConfiguration], error) {
	kind, err := configscheme.NewKind()
	if err != nil {
		return nil, err
	}
	return &layers.Component[*config.ComponentConfiguration]{
		Name: "mycomp", Kind: kind,
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			fs := fss.FlagSet("generic")
			fs.Int32("port", 8443, "serving port")
			b.Bind("port", "/port", nil) // converted from the flag's text by the field's type
			gates := map[string]bool{}
			fs.Var(cliflag.NewMapStringBool(&gates), "feature-gates", "gates")
			b.Bind("feature-gates", "/featureGates", &gates)
			return nil
		},
	}, nil
}

// TestPathDeclarations fails when a string field of the example's v1beta1
// type is declared neither a path nor not a path.
func TestPathDeclarations(t *testing.T) {
	kind, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	fields := kind.MergeFields()
	validation.CheckStrings(t, fields)
	if !fields.Has("/tlsCertFile", validation.Path) || !fields.Has("/clientConnection/kubeconfig", validation.Path) || !fields.Has("/syncFrequency", validation.RestartOnly) {
		t.Errorf("markers from tags and declarations missing: %v %v", fields.Keys(validation.Path), fields.Keys(validation.RestartOnly))
	}
}

type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func TestCheckStringsCatchesUndeclared(t *testing.T) {
	type v1 struct {
		Name   string            `json:"name" strata:"not-path"`
		CAFile string            `json:"caFile"`
		Dirs   []string          `json:"dirs" strata:"path"`
		Labels map[string]string `json:"labels"`
		Nested struct {
			Key *string `json:"key"`
		} `json:"nested"`
		Untouched int `json:"untouched"`
	}
	fields, err := validation.FieldsFor(reflectType[v1](), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	validation.CheckStrings(&r, fields)
	got := strings.Join(r.errs, "\n")
	for _, want := range []string{"/caFile", "/labels/*", "/nested/key"} {
		if !strings.Contains(got, "string field "+want+" ") {
			t.Errorf("CheckStrings did not report %s:\n%s", want, got)
		}
	}
	if len(r.errs) != 3 {
		t.Errorf("CheckStrings reported %d fields, want 3:\n%s", len(r.errs), got)
	}
	if _, err := validation.FieldsFor(reflectType[v1](), map[string]validation.Marker{"/nope": validation.Path}, nil); err == nil {
		t.Error("FieldsFor accepted a declared key that is no field")
	}
}

// TestGlobalFlagsDoNotLeak registers flags on both global flag sets, as
// third-party packages do, and checks that the component neither lists nor
// parses them.
func TestGlobalFlagsDoNotLeak(t *testing.T) {
	if pflag.CommandLine.Lookup("leaky-pflag") == nil { // -count above 1 runs this again
		pflag.CommandLine.String("leaky-pflag", "", "")
		flag.CommandLine.String("leaky-goflag", "", "")
	}
	c := component(t)
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	if u := cl.Usage("mycomp"); strings.Contains(u, "leaky") || !strings.Contains(u, "--port") {
		t.Errorf("usage:\n%s", u)
	}
	for _, arg := range []string{"--leaky-pflag=x", "--leaky-goflag=x"} {
		if _, _, err := c.Load(context.Background(), []string{arg}); err == nil || !strings.Contains(err.Error(), "unknown flag") {
			t.Errorf("%s parsed: %v", arg, err)
		}
	}
}

func TestValidationNamesLayer(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nallowedOrigins: [https://ok.example, not-an-origin]\nclientConnection: {qps: -1}\n"), 0o644)
	_, _, err := component(t).Load(context.Background(), []string{"--config", cfg, "--port", "0"})
	if err == nil {
		t.Fatal("invalid configuration loaded")
	}
	for _, want := range []string{
		"flag --port: port: Invalid value: 0",
		"file " + cfg + ": allowedOrigins[1]: Invalid value: \"not-an-origin\"",
		"file " + cfg + ": clientConnection.qps: Invalid value: -1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func ExampleComponent_Load() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte(`apiVersion: component.example.strata.dev/v1beta1
kind: ComponentConfiguration
port: 9443
featureGates: {AlphaThing: true}
`), 0o644)

	c, _ := newComponent()
	loaded, _, err := c.Load(context.Background(), []string{"--config", cfg, "--feature-gates", "BetaThing=false"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(loaded.Object.Port, loaded.Object.FeatureGates)
	for _, key := range []string{"/port", "/featureGates/BetaThing", "/syncFrequency"} {
		src, _ := loaded.Provenance.SourceOf(key)
		fmt.Println(key, "from", strings.Replace(src.String(), dir, "DIR", 1))
	}
	e, _ := c.Explain(loaded, c.Kind.Preferred())
	b, _ := json.Marshal(e.Provenance["/port"])
	fmt.Println(strings.Replace(string(b), dir, "DIR", 1))
	// Output:
	// 9443 map[AlphaThing:true BetaThing:false]
	// /port from file DIR/config.yaml
	// /featureGates/BetaThing from flag --feature-gates
	// /syncFrequency from default
	// {"source":"file DIR/config.yaml","shadowed":[]}
}

// fileSnapshot is the snapshot of one file target holding content.
func fileSnapshot(path, content string) *watch.Contents {
	return &watch.Contents{Generations: []*watch.Generation{{Path: path, Files: []watch.Entry{{Name: filepath.Base(path), Data: []byte(content)}}}}}
}

func TestReloadKeepsRestartOnlyKeys(t *testing.T) {
	c := component(t)
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Parse([]string{"--config", "/etc/c.yaml"}); err != nil {
		t.Fatal(err)
	}
	head := "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n"
	running, err := c.LoadFiles(context.Background(), cl, fileSnapshot("/etc/c.yaml", head+"enableProfiling: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.Reload(context.Background(), cl, fileSnapshot("/etc/c.yaml", head+"enableProfiling: false\nsyncFrequency: 5m\nport: 9000\n"), running)
	if err != nil {
		t.Fatal(err)
	}
	o := next.Object
	if o.EnableProfiling || o.SyncFrequency.Duration != time.Minute || o.Port != 8443 {
		t.Fatalf("reloaded: profiling %t, sync %s, port %d; want false, 1m (running), 8443 (running)", o.EnableProfiling, o.SyncFrequency.Duration, o.Port)
	}
	if got := strings.Join(next.RestartRequired, ","); got != "/port,/syncFrequency" {
		t.Fatalf("RestartRequired = %q", got)
	}
	p, _ := next.Provenance.Explain("/syncFrequency")
	if p.Source.Origin != layers.OriginRunning || len(p.Shadowed) == 0 || p.Shadowed[0].Source.Name != "/etc/c.yaml" {
		t.Fatalf("provenance of /syncFrequency: %+v", p)
	}
	// Once nothing restart-only differs, nothing is pinned.
	same, err := c.Reload(context.Background(), cl, fileSnapshot("/etc/c.yaml", head+"enableProfiling: true\n"), running)
	if err != nil || len(same.RestartRequired) != 0 {
		t.Fatalf("reload to the running values: %v, %v", same.RestartRequired, err)
	}
}

// TestReloadKeepsRestartOnlyPathsResolved marks the path field
// tlsCertFile restart-only (a serving certificate is loaded at start). A
// reload that changes it keeps the value the process runs with: the path
// resolved against the file that set it, not the relative text the file
// holds.
func TestReloadKeepsRestartOnlyPathsResolved(t *testing.T) {
	c := restartOnlyCert(t)
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "etc", "c.yaml")
	if err := cl.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	head := "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n"
	running, err := c.LoadFiles(context.Background(), cl, fileSnapshot(path, head+"tlsCertFile: a.crt\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(path), "a.crt")
	if running.Object.TLSCertFile != want {
		t.Fatalf("running tlsCertFile %q, want %q", running.Object.TLSCertFile, want)
	}
	next, err := c.Reload(context.Background(), cl, fileSnapshot(path, head+"tlsCertFile: b.crt\n"), running)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(next.RestartRequired, ","); got != "/tlsCertFile" {
		t.Fatalf("RestartRequired = %q, want /tlsCertFile", got)
	}
	if next.Object.TLSCertFile != want {
		t.Errorf("after a reload that keeps the running tlsCertFile: %q, want the running value %q", next.Object.TLSCertFile, want)
	}
	// The same path written otherwise is the same file: nothing to pin.
	same, err := c.Reload(context.Background(), cl, fileSnapshot(path, head+"tlsCertFile: ./a.crt\n"), running)
	if err != nil || len(same.RestartRequired) != 0 || same.Object.TLSCertFile != want {
		t.Errorf("reload to ./a.crt: RestartRequired %v, tlsCertFile %q, %v; want none, %q", same.RestartRequired, same.Object.TLSCertFile, err, want)
	}
}

// TestKindDefaultIsThePipelines checks that the source kind layers names
// defaulting is the one its decode credits defaults to.
func TestKindDefaultIsThePipelines(t *testing.T) {
	loaded, _, err := component(t).Load(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if src, _ := loaded.Provenance.SourceOf("/syncFrequency"); src.Origin != layers.OriginDefault {
		t.Errorf("a defaulted key is credited to %q, not layers.OriginDefault %q", src.Origin, layers.OriginDefault)
	}
}

// TestHostileDropInDirectory loads a drop-in directory holding every entry
// a careless or hostile writer can leave: what has no drop-in's name is
// never looked at, a directory with one is skipped and reported, and a
// FIFO with one fails the load by name without blocking it.
func TestHostileDropInDirectory(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.d")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(conf, 0o755))
	must(os.WriteFile(filepath.Join(conf, "10-port.yaml"), []byte("port: 9001\n"), 0o644))
	must(os.Symlink(filepath.Join(dir, "gone"), filepath.Join(conf, "README")))
	must(os.Symlink(filepath.Join(dir, "gone"), filepath.Join(conf, ".10-hidden.yaml")))
	must(syscall.Mkfifo(filepath.Join(conf, "notes.txt"), 0o644))
	must(os.Mkdir(filepath.Join(conf, "20-old.conf"), 0o755))

	c := component(t)
	loaded, _, err := c.Load(context.Background(), []string{"--config-dir", conf})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if loaded.Object.Port != 9001 {
		t.Errorf("port %d, want 9001 from 10-port.yaml", loaded.Object.Port)
	}
	want := []string{
		filepath.Join(conf, ".10-hidden.yaml") + ": hidden",
		filepath.Join(conf, "20-old.conf") + ": a directory",
		filepath.Join(conf, "README") + ": no extension; drop-ins end in .conf, .json, .yaml, .yml",
		filepath.Join(conf, "notes.txt") + ": extension .txt; drop-ins end in .conf, .json, .yaml, .yml",
	}
	if strings.Join(loaded.Skipped, "|") != strings.Join(want, "|") {
		t.Errorf("skipped\n%s\nwant\n%s", strings.Join(loaded.Skipped, "\n"), strings.Join(want, "\n"))
	}

	must(syscall.Mkfifo(filepath.Join(conf, "30-pipe.yaml"), 0o644))
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Load(context.Background(), []string{"--config-dir", conf})
		done <- err
	}()
	select {
	case err := <-done:
		if want := filepath.Join(conf, "30-pipe.yaml") + " is a named pipe (FIFO)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("load with a FIFO drop-in: %v, want an error containing %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a FIFO in the drop-in directory blocked the load")
	}
}

// TestDropInLinksOut refuses a drop-in that is a link to a file outside
// the directory, naming it, unless DropInPolicy.LinksOut; a link to a
// drop-in inside is read.
func TestDropInLinksOut(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.d")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(conf, 0o755))
	must(os.WriteFile(filepath.Join(conf, "10-port.yaml"), []byte("port: 9001\n"), 0o644))
	must(os.Symlink("10-port.yaml", filepath.Join(conf, "15-same.yaml")))
	c := component(t)
	if loaded, _, err := c.Load(context.Background(), []string{"--config-dir", conf}); err != nil || loaded.Object.Port != 9001 {
		t.Fatalf("a link inside: %v", err)
	}
	must(os.WriteFile(filepath.Join(dir, "shared.yaml"), []byte("port: 9002\n"), 0o644))
	must(os.Symlink("../shared.yaml", filepath.Join(conf, "20-shared.yaml")))
	_, _, err := c.Load(context.Background(), []string{"--config-dir", conf})
	if want := filepath.Join(conf, "20-shared.yaml") + " is a symbolic link that leads outside its source (it points to ../shared.yaml)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a link out: %v, want an error containing %q", err, want)
	}
	c.DropIns.LinksOut = true
	if loaded, _, err := c.Load(context.Background(), []string{"--config-dir", conf}); err != nil || loaded.Object.Port != 9002 {
		t.Errorf("a link out with LinksOut: %v, want port 9002", err)
	}
}

// TestProvenancesShowShadowedValues lists what each shadowed layer set,
// the nearest first, and never the value of a reference.
func TestProvenancesShowShadowedValues(t *testing.T) {
	ref := merge.Ref{Kind: "secret", Namespace: "team-a", Name: "db", Key: "password"}
	r := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: "default"}, Values: map[string]string{"/port": "8443", "/password": `"changeme"`}},
		&merge.Layer{Source: merge.Source{Origin: "file", Name: "a.yaml"}, Values: map[string]string{"/port": "9000", "/password": ref.JSON()}},
		&merge.Layer{Source: merge.Source{Origin: "flag", Name: "--port"}, Values: map[string]string{"/port": "9090", "/password": `"plain"`}},
	)
	p := layers.Provenances(r)
	if got, want := fmt.Sprint(p["/port"].Shadowed), "[file a.yaml default]"; got != want {
		t.Errorf("/port shadowed %s, want %s", got, want)
	}
	var vals []string
	for _, v := range p["/port"].ShadowedValues {
		vals = append(vals, string(v))
	}
	if got := strings.Join(vals, " "); got != "9000 8443" {
		t.Errorf("/port shadowed values %s, want 9000 8443", got)
	}
	vals = nil
	for _, v := range p["/password"].ShadowedValues {
		vals = append(vals, string(v))
	}
	if got := strings.Join(vals, " "); got != `null "changeme"` {
		t.Errorf("/password shadowed values %s, want the reference as null", got)
	}
}
