package layers_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	cliflag "k8s.io/component-base/cli/flag"

	config "github.com/stratacfg/strata/internal/testkind/component"
	"github.com/stratacfg/strata/internal/testkind/component/v1beta1"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/watch"
)

// TestKubeletDropInPolicy reads a drop-in directory with kubelet's policy:
// .conf only, subdirectories walked as filepath.WalkDir walks them,
// dot-files read, apiVersion and kind required, a duplicate field refused
// while the main file tolerates one.
func TestKubeletDropInPolicy(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf.d")
	watchtest.WriteFiles(t, dir, map[string]string{
		"c.yaml":              head + "port: 1\nport: 2\n", // a duplicate: tolerated in the main file (warn)
		"conf.d/a-b.conf":     head + "port: 30\n",
		"conf.d/a/z.conf":     head + "port: 20\n", // WalkDir: a/z.conf before a-b.conf
		"conf.d/.hidden.conf": head + "enableProfiling: false\n",
		"conf.d/10.yaml":      head + "port: 99\n", // not .conf
		"conf.d/README":       "not configuration",
	})
	warn, strictDup := scheme.Warn, scheme.Strict
	c := component(t)
	c.FileMode = &warn
	c.DropIns = layers.DropInPolicy{Extensions: []string{".conf"}, Recursive: true, Hidden: true, RequireTypeMeta: true, Mode: &strictDup}
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", conf})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Object.Port != 30 || loaded.Object.EnableProfiling {
		t.Errorf("port %d profiling %t, want 30 from a-b.conf (walked after a/z.conf) and false from .hidden.conf", loaded.Object.Port, loaded.Object.EnableProfiling)
	}
	if len(loaded.Warnings) == 0 || !strings.Contains(loaded.Warnings[0], `duplicate field "port"`) {
		t.Errorf("warnings %q", loaded.Warnings)
	}
	if got := strings.Join(loaded.Skipped, "\n"); !strings.Contains(got, "conf.d/10.yaml: extension .yaml; drop-ins end in .conf") || !strings.Contains(got, "conf.d/README: no extension") {
		t.Errorf("skipped:\n%s", got)
	}

	for name, content := range map[string]string{
		"no type meta":      "port: 5\n",
		"a duplicate field": head + "port: 5\nport: 6\n",
	} {
		watchtest.WriteFiles(t, dir, map[string]string{"conf.d/b.conf": content})
		if _, _, err := c.Load(context.Background(), []string{"--config-dir", conf}); err == nil || !strings.Contains(err.Error(), "b.conf") {
			t.Errorf("%s in a drop-in: %v", name, err)
		}
	}
}

// TestNormalizedFlagNames accepts kubelet's underscore spellings.
func TestNormalizedFlagNames(t *testing.T) {
	c := component(t)
	c.NormalizeFlags = cliflag.WordSepNormalizeFunc
	c.Flags = func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		var port int32
		fss.FlagSet("x").Int32Var(&port, "secure-port", 0, "")
		b.Bind("secure-port", "/port", &port)
		return nil
	}
	loaded, _, err := c.Load(context.Background(), []string{"--secure_port=7000"})
	if err != nil || loaded.Object.Port != 7000 {
		t.Fatalf("--secure_port: %v, %+v", err, loaded)
	}
}

// TestUnboundFlagFailsAtConstruction registers a flag that sets nothing.
func TestUnboundFlagFailsAtConstruction(t *testing.T) {
	c := component(t)
	c.Flags = func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		fss.FlagSet("x").String("kubeconfig-path", "", "")
		fss.FlagSet("x").Bool("serve", false, "")
		b.NotConfiguration("it runs the server", "serve")
		return nil
	}
	if _, err := c.NewCommandLine(); err == nil || !strings.Contains(err.Error(), "flag --kubeconfig-path is bound to no configuration key") || strings.Contains(err.Error(), "--serve") {
		t.Errorf("NewCommandLine: %v", err)
	}
}

// TestReplaceMapFlag binds a map flag that replaces the file's map, and
// one that merges into it.
func TestReplaceMapFlag(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": head + "featureGates: {AlphaThing: true, BetaThing: true}\n"})
	for _, tc := range []struct {
		opts []layers.BindOption
		want string
	}{
		{nil, "map[AlphaThing:false BetaThing:true]"},
		{[]layers.BindOption{layers.Replace()}, "map[AlphaThing:false]"},
	} {
		c := component(t)
		c.Flags = func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			gates := map[string]bool{}
			fss.FlagSet("x").Var(cliflag.NewMapStringBool(&gates), "feature-gates", "")
			b.Bind("feature-gates", "/featureGates", &gates, tc.opts...)
			return nil
		}
		loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "--feature-gates", "AlphaThing=false"})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmtMap(loaded.Object.FeatureGates); got != tc.want {
			t.Errorf("replace %t: gates %s, want %s", len(tc.opts) > 0, got, tc.want)
		}
		if len(tc.opts) > 0 {
			p, _ := loaded.Provenance.Explain("/featureGates/AlphaThing")
			if p.Source.String() != "flag --feature-gates" {
				t.Errorf("provenance %+v", p)
			}
		}
	}
}

// TestComponentDefault defaults what the scheme leaves to the component,
// after the merge, credited to "default".
func TestComponentDefault(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": head + "allowedOrigins: [https://a.example]\n"})
	c := component(t)
	c.Default = func(obj runtime.Object) {
		cfg := obj.(*v1beta1.ComponentConfiguration)
		if cfg.TLSCertFile == "" {
			cfg.TLSCertFile = "/etc/component/tls.crt"
		}
	}
	loaded, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml")})
	if err != nil || loaded.Object.TLSCertFile != "/etc/component/tls.crt" {
		t.Fatalf("%v %+v", err, loaded)
	}
	if src, _ := loaded.Provenance.SourceOf("/tlsCertFile"); src.Origin != layers.OriginDefault {
		t.Errorf("/tlsCertFile from %s, want default", src)
	}
	c.Default = func(runtime.Object) { panic("boom") }
	if _, _, err := c.Load(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "defaulting the merged configuration: panicked: boom") {
		t.Errorf("a panicking defaulter: %v", err)
	}
}

func fmtMap(m map[string]bool) string {
	var parts []string
	for _, k := range []string{"AlphaThing", "BetaThing"} {
		if v, ok := m[k]; ok {
			parts = append(parts, k+":"+map[bool]string{true: "true", false: "false"}[v])
		}
	}
	return "map[" + strings.Join(parts, " ") + "]"
}

// TestBindFields registers flags against the internal configuration, as
// kubelet's AddKubeletConfigFlags does, and derives the binding table from
// the fields they write into.
func TestBindFields(t *testing.T) {
	c := component(t)
	var unplaced []string
	c.Flags = func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		scratch := &config.ComponentConfiguration{}
		fs := fss.FlagSet("component")
		fs.Int32Var(&scratch.Port, "port", 8443, "")
		fs.DurationVar(&scratch.SyncFrequency.Duration, "sync-frequency", time.Minute, "")
		fs.Float32Var(&scratch.ClientConnection.QPS, "kube-api-qps", 5, "")
		fs.Var(cliflag.NewMapStringBool(&scratch.FeatureGates), "feature-gates", "")
		fs.StringVar(&scratch.TLSCertFile, "tls-cert-file", "", "")
		fs.Bool("run-once", false, "")
		unplaced = b.BindFields(fs, scratch, func() ([]byte, error) {
			v := &v1beta1.ComponentConfiguration{}
			if err := c.Kind.Scheme().Convert(scratch, v, nil); err != nil {
				return nil, err
			}
			return json.Marshal(v)
		}, nil)
		b.NotConfiguration("runs once", unplaced...)
		return nil
	}
	loaded, _, err := c.Load(context.Background(), []string{"--port=7000", "--sync-frequency=2m", "--kube-api-qps=7.5", "--feature-gates=AlphaThing=true", "--tls-cert-file=/c.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(unplaced, ",") != "run-once" {
		t.Errorf("unplaced %v", unplaced)
	}
	o := loaded.Object
	if o.Port != 7000 || o.SyncFrequency.Duration != 2*time.Minute || o.ClientConnection.QPS != 7.5 || !o.FeatureGates["AlphaThing"] || o.TLSCertFile != "/c.pem" {
		t.Errorf("loaded %+v", o)
	}
	for key, flag := range map[string]string{"/port": "--port", "/syncFrequency": "--sync-frequency", "/clientConnection/qps": "--kube-api-qps", "/featureGates/AlphaThing": "--feature-gates"} {
		if src, _ := loaded.Provenance.SourceOf(key); src.Name != flag {
			t.Errorf("%s from %s, want flag %s", key, src, flag)
		}
	}
}

// TestWatchReadsAsLoadReads loads the same files with Load and with Watch
// under a recursive drop-in policy, on a plain tree and on the same tree
// published by a git-sync-style link, and requires the same configuration,
// provenance and skipped entries: the watcher reads what Load reads, the
// subdirectories included (a watcher that read only direct children gave
// port 8443 where Load gave 7000).
func TestWatchReadsAsLoadReads(t *testing.T) {
	tree := map[string]string{
		"c.yaml":                 head + "enableProfiling: true\n",
		"conf.d/10.conf":         head + "port: 6000\n",
		"conf.d/team/20.conf":    head + "port: 7000\n",
		"conf.d/.hidden/30.conf": head + "port: 9999\n", // a hidden directory: not read
		"conf.d/team/README":     "not a drop-in",
	}
	for _, tc := range []struct {
		name string
		root func(t *testing.T) string
	}{
		{"plain", func(t *testing.T) string {
			dir := t.TempDir()
			watchtest.WriteFiles(t, dir, tree)
			return dir
		}},
		{"git-sync", func(t *testing.T) string {
			g := watchtest.NewGitSync(t.TempDir(), "link")
			if err := g.Write(tree); err != nil {
				t.Fatal(err)
			}
			return g.Path()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root(t)
			loaded, watched := loadAndWatch(t, layers.DropInPolicy{Extensions: []string{".conf"}, Recursive: true}, root,
				layers.WatchOptions[*config.ComponentConfiguration]{PollInterval: time.Hour})
			if loaded.Object.Port != 7000 || watched.Object.Port != 7000 {
				t.Errorf("port: Load %d, Watch %d; want 7000 from team/20.conf", loaded.Object.Port, watched.Object.Port)
			}
			if a := strings.Join(loaded.Skipped, "|"); !strings.Contains(a, "conf.d/.hidden: hidden") || !strings.Contains(a, "conf.d/team/README: no extension") {
				t.Errorf("skipped: %q", a)
			}
		})
	}
}

// TestWatchWithMarkersReadsAsLoadReads watches a drop-in directory with
// version markers in subdirectories, as a projected volume of two
// ConfigMaps holds them, under a kubelet-like policy (hidden drop-ins read)
// and a recursive one: the watcher reads the markers besides, and takes
// the same drop-ins, skips the same entries and never opens what the
// policy leaves out (a dangling link, a file over the size limit).
func TestWatchWithMarkersReadsAsLoadReads(t *testing.T) {
	for _, policy := range []layers.DropInPolicy{
		{Extensions: []string{".conf"}, Hidden: true},
		{Extensions: []string{".conf"}, Recursive: true},
	} {
		t.Run(fmt.Sprintf("recursive=%t", policy.Recursive), func(t *testing.T) {
			root := t.TempDir()
			watchtest.WriteFiles(t, root, map[string]string{
				"c.yaml":           head + "enableProfiling: true\n",
				"conf.d/.10.conf":  head + "port: 6000\n",
				"conf.d/20.conf":   head + "enableProfiling: false\n",
				"conf.d/a/VERSION": "v1\n",
				"conf.d/b/VERSION": "v1\n",
				"conf.d/b/big.bin": strings.Repeat("x", 5<<20),
			})
			if err := os.Symlink("nowhere", filepath.Join(root, "conf.d", "README")); err != nil {
				t.Fatal(err)
			}
			loaded, watched := loadAndWatch(t, policy, root, layers.WatchOptions[*config.ComponentConfiguration]{PollInterval: time.Hour,
				Consistent: watch.MarkersAgree("VERSION"), Markers: []string{"VERSION"}})
			if loaded.Object.Port != watched.Object.Port || loaded.Object.EnableProfiling || watched.Object.EnableProfiling {
				t.Errorf("Load: port %d, profiling %t; Watch: port %d, profiling %t", loaded.Object.Port, loaded.Object.EnableProfiling, watched.Object.Port, watched.Object.EnableProfiling)
			}
		})
	}
}

// loadAndWatch loads root/c.yaml and the drop-ins of root/conf.d under
// policy, then watches the same command line with o, and returns both
// configurations, having failed t unless they hold the same provenance
// and skip the same entries. The watcher stops when the test ends.
func loadAndWatch(t *testing.T, policy layers.DropInPolicy, root string, o layers.WatchOptions[*config.ComponentConfiguration]) (loaded, watched *layers.Loaded[*config.ComponentConfiguration]) {
	t.Helper()
	c := component(t)
	c.DropIns = policy
	args := []string{"--config", filepath.Join(root, "c.yaml"), "--config-dir", filepath.Join(root, "conf.d")}
	loaded, cl, err := c.Load(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, cl, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-w.Done()
	})
	watched = w.Current()
	if a, b := explainJSON(t, loaded.Provenance), explainJSON(t, watched.Provenance); a != b {
		t.Errorf("provenance differs:\nLoad  %s\nWatch %s", a, b)
	}
	if a, b := strings.Join(loaded.Skipped, "|"), strings.Join(watched.Skipped, "|"); a != b {
		t.Errorf("skipped: Load %q, Watch %q", a, b)
	}
	return loaded, watched
}

// TestDirectoryInPlaceOfFile replaces --config by a directory: Load at
// start-up and a reload under Watch refuse it with the same words.
func TestDirectoryInPlaceOfFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": head + "port: 6000\n"})
	c := component(t)
	args := []string{"--config", path}
	_, cl, err := c.Load(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failed := make(chan error, 16)
	w, err := c.Watch(ctx, cl, layers.WatchOptions[*config.ComponentConfiguration]{PollInterval: 20 * time.Millisecond,
		OnReload: func(r watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]) {
			if r.Err != nil {
				failed <- r.Err
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	var reloadErr error
	select {
	case reloadErr = <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("no failed reload after the file became a directory")
	}
	_, _, loadErr := c.Load(context.Background(), args)
	if loadErr == nil || !strings.HasSuffix(loadErr.Error(), ": "+reloadErr.Error()) || !strings.Contains(loadErr.Error(), "c.yaml is a directory, not a regular file") {
		t.Errorf("Load: %v\nWatch: %v", loadErr, reloadErr)
	}
	if w.Current().Object.Port != 6000 {
		t.Error("the refused reload changed the configuration")
	}
	cancel()
	<-w.Done()
}

// explainJSON is every key of r with its provenance, as JSON.
func explainJSON(t *testing.T, r *merge.Result) string {
	t.Helper()
	all := map[string]merge.Provenance{}
	for _, k := range r.Keys() {
		all[k], _ = r.Explain(k)
	}
	out, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestGzipFiles loads a gzip'd --config and drop-in, as a ConfigMap
// compressed by prow's updateconfig mounts them: read decompressed, the
// sources marked "(gzip)" in provenance and --explain; a bomb refused by
// the kind's limit, naming the file; KeepGzip reads them as stored.
func TestGzipFiles(t *testing.T) {
	dir := t.TempDir()
	compressed := func(s string) string {
		var b strings.Builder
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.String()
	}
	watchtest.WriteFiles(t, dir, map[string]string{
		"c.yaml":         compressed(head + "port: 9000\n"),
		"conf.d/10.yaml": compressed("enableProfiling: false\n"),
		"bomb.yaml":      compressed(head + "# " + strings.Repeat("x", 5<<20) + "\n"),
	})
	c := component(t)
	args := []string{"--config", filepath.Join(dir, "c.yaml"), "--config-dir", filepath.Join(dir, "conf.d")}
	loaded, _, err := c.Load(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Object.Port != 9000 || loaded.Object.EnableProfiling {
		t.Errorf("port %d, profiling %t", loaded.Object.Port, loaded.Object.EnableProfiling)
	}
	for key, want := range map[string]string{"/port": "file " + filepath.Join(dir, "c.yaml") + " (gzip)", "/enableProfiling": "drop-in " + filepath.Join(dir, "conf.d/10.yaml") + " (gzip)"} {
		if src, _ := loaded.Provenance.SourceOf(key); src.String() != want {
			t.Errorf("%s from %q, want %q", key, src, want)
		}
	}
	code, stdout, _ := func() (int, string, string) {
		var out, errOut strings.Builder
		cl := append([]string{"--explain"}, args...)
		code := c.Execute(context.Background(), cl, &out, &errOut, func(context.Context, *layers.CommandLine, *layers.Loaded[*config.ComponentConfiguration]) error {
			return nil
		})
		return code, out.String(), errOut.String()
	}()
	if code != 0 || !strings.Contains(stdout, `c.yaml (gzip)"`) {
		t.Errorf("--explain: exit %d, %s", code, stdout)
	}
	if _, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(dir, "bomb.yaml")}); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(dir, "bomb.yaml")) || !strings.Contains(err.Error(), "is gzip-compressed and over the limit of 4194304 bytes once decompressed") {
		t.Errorf("a bomb: %v", err)
	}
	c.KeepGzip = true
	if _, _, err := c.Load(context.Background(), args); err == nil || !strings.Contains(err.Error(), "c.yaml") {
		t.Errorf("KeepGzip: %v", err)
	}
}
