package layers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	cliflag "k8s.io/component-base/cli/flag"

	config "github.com/stratacfg/strata/internal/testkind/component"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/watch"
)

const head = "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n"

func TestBindIsCheckedWhenBound(t *testing.T) {
	c := component(t)
	for _, tc := range []struct {
		name string
		bind func(fss *cliflag.NamedFlagSets, b *layers.Flags) error
		want string
	}{{
		name: "no such key",
		bind: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			fss.FlagSet("x").Int32("prot", 1, "")
			b.Bind("prot", "/prot", nil)
			return nil
		},
		want: "flag --prot is bound to /prot, which is no field",
	}, {
		name: "a duration flag on an integer",
		bind: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var d time.Duration
			fss.FlagSet("x").DurationVar(&d, "port-after", time.Second, "")
			b.Bind("port-after", "/port", &d)
			return nil
		},
		want: "flag --port-after holds a time.Duration, which cannot set /port",
	}, {
		name: "a duration flag on a metav1.Duration",
		bind: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var d time.Duration
			fss.FlagSet("x").DurationVar(&d, "sync", time.Minute, "")
			b.Bind("sync", "/syncFrequency", &d)
			return nil
		},
		want: `flag --sync holds a time.Duration, which cannot set /syncFrequency (a v1.Duration): bind nil instead of the pointer, and the flag's text ("1m0s") is read as a v1.Duration`,
	}, {
		name: "a duration flag's text on an integer",
		bind: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			fss.FlagSet("x").Duration("port-after", time.Second, "")
			b.Bind("port-after", "/port", nil)
			return nil
		},
		want: "flag --port-after (a duration flag) cannot set /port",
	}, {
		name: "a boolean on a list",
		bind: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var on bool
			fss.FlagSet("x").BoolVar(&on, "origins", false, "")
			b.Bind("origins", "/allowedOrigins", &on)
			return nil
		},
		want: "flag --origins holds a bool, which cannot set /allowedOrigins",
	}, {
		name: "bound but not registered",
		bind: func(_ *cliflag.NamedFlagSets, b *layers.Flags) error {
			b.Bind("ghost", "/port", nil)
			return nil
		},
		want: "flag --ghost is bound to /port but not registered",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := *c
			c.Flags = tc.bind
			if _, err := c.NewCommandLine(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewCommandLine: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// What binds well: a pointer of the field's type or kind, a map flag
	// on a map, a list flag on a list, a duration on a metav1.Duration, a
	// flag's text converted by the field's type.
	ok := *c
	ok.Flags = func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		fs := fss.FlagSet("x")
		var port int
		fs.IntVar(&port, "port", 1, "")
		b.Bind("port", "/port", &port)
		gates := map[string]bool{}
		fs.Var(cliflag.NewMapStringBool(&gates), "feature-gates", "")
		b.Bind("feature-gates", "/featureGates", &gates)
		fs.StringSlice("allowed-origins", nil, "")
		b.Bind("allowed-origins", "/allowedOrigins", nil)
		fs.Duration("sync-frequency", time.Minute, "")
		b.Bind("sync-frequency", "/syncFrequency", nil)
		var sync string
		fs.StringVar(&sync, "sync-text", "", "")
		b.Bind("sync-text", "/syncFrequency", &sync)
		fs.Float32("qps", 5, "")
		b.Bind("qps", "/clientConnection/qps", nil)
		return nil
	}
	if _, err := ok.NewCommandLine(); err != nil {
		t.Errorf("good bindings refused: %v", err)
	}
}

// TestExplainInAnOlderVersion explains the configuration in v1alpha1,
// which calls enableProfiling profiling: provenance is keyed by v1alpha1's
// field paths.
func TestExplainInAnOlderVersion(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(head+"enableProfiling: false\nport: 9000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := component(t)
	loaded, _, err := c.Load(context.Background(), []string{"--config", cfg, "--feature-gates", "AlphaThing=true"})
	if err != nil {
		t.Fatal(err)
	}
	old := schema.GroupVersion{Group: config.GroupName, Version: "v1alpha1"}
	e, err := c.Explain(loaded, old)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(e.Config, &doc); err != nil || doc["profiling"] != false || doc["apiVersion"] != old.String() {
		t.Fatalf("config in v1alpha1: %s (%v)", e.Config, err)
	}
	for key, want := range map[string]string{
		"/profiling":               "file " + cfg,
		"/port":                    "file " + cfg,
		"/featureGates/AlphaThing": "flag --feature-gates",
		"/syncFrequency":           "default",
		"/clientConnection/qps":    "default",
	} {
		if got := e.Provenance[key].Source; got != want {
			t.Errorf("provenance of %s: %q, want %q", key, got, want)
		}
	}
	if _, ok := e.Provenance["/enableProfiling"]; ok {
		t.Error("v1beta1's key /enableProfiling in a v1alpha1 explanation")
	}
	// In the merge version, the merge version's keys.
	e, err = c.Explain(loaded, c.Kind.MergeVersion())
	if err != nil || e.Provenance["/enableProfiling"].Source != "file "+cfg {
		t.Errorf("v1beta1 explanation: %v, %v", e.Provenance["/enableProfiling"], err)
	}
}

// execute runs the test component's Execute with args.
func execute(t *testing.T, args ...string) (code int, stdout, stderr string, ran *config.ComponentConfiguration) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = component(t).Execute(context.Background(), args, &out, &errOut, func(_ context.Context, _ *layers.CommandLine, cfg *layers.Loaded[*config.ComponentConfiguration]) error {
		ran = cfg.Object
		if cfg.Object.Port == 1 {
			return errors.New("port 1 refused by the component")
		}
		return nil
	})
	return code, out.String(), errOut.String(), ran
}

func TestExecute(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(head+"port: 9000\nenableProfiling: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("runs", func(t *testing.T) {
		code, _, stderr, ran := execute(t, "--config", cfg)
		if code != 0 || ran == nil || ran.Port != 9000 || stderr != "" {
			t.Errorf("code %d, ran %v, stderr %q", code, ran, stderr)
		}
	})
	t.Run("run fails", func(t *testing.T) {
		code, _, stderr, _ := execute(t, "--config", cfg, "--port", "1")
		if code != 1 || stderr != "mycomp: port 1 refused by the component\n" {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})
	t.Run("help", func(t *testing.T) {
		code, stdout, _, ran := execute(t, "--help")
		for _, f := range []string{"--explain", "--print-config", "--output-version", "--write-config-to", "--config", "--port"} {
			if !strings.Contains(stdout, f) {
				t.Errorf("usage lacks %s", f)
			}
		}
		if code != 0 || ran != nil {
			t.Errorf("code %d, ran %v", code, ran)
		}
	})
	t.Run("usage error", func(t *testing.T) {
		code, _, stderr, ran := execute(t, "--nope")
		if code != 2 || ran != nil || !strings.HasPrefix(stderr, "mycomp: unknown flag: --nope\n\nUsage: mycomp") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})
	t.Run("invalid configuration", func(t *testing.T) {
		code, _, stderr, ran := execute(t, "--config", cfg, "--port", "0")
		if code != 1 || ran != nil || !strings.Contains(stderr, "flag --port: port: Invalid value: 0") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})
	t.Run("explain", func(t *testing.T) {
		code, stdout, _, ran := execute(t, "--config", cfg, "--explain", "--output-version", "v1alpha1")
		var e layers.Explanation
		if err := json.Unmarshal([]byte(stdout), &e); err != nil || code != 0 || ran != nil || e.Provenance["/profiling"].Source != "file "+cfg {
			t.Errorf("code %d, %v, stdout %s", code, err, stdout)
		}
	})
	t.Run("print-config", func(t *testing.T) {
		code, stdout, _, ran := execute(t, "--config", cfg, "--print-config")
		if code != 0 || ran != nil || !strings.Contains(stdout, "apiVersion: component.example.strata.dev/v1beta1") || !strings.Contains(stdout, "port: 9000") {
			t.Errorf("code %d, stdout %s", code, stdout)
		}
	})
	t.Run("write-config-to", func(t *testing.T) {
		to := filepath.Join(dir, "effective.yaml")
		if err := os.WriteFile(to, []byte("old content that is longer than the new one will be, surely, yes"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, _, ran := execute(t, "--config", cfg, "--write-config-to", to, "--output-version", "v1alpha1")
		got, err := os.ReadFile(to)
		if code != 0 || ran != nil || stdout != "" || err != nil || !strings.Contains(string(got), "profiling: false") || !strings.Contains(string(got), "v1alpha1") {
			t.Fatalf("code %d, stdout %q, file %s (%v)", code, stdout, got, err)
		}
		// What it wrote loads back to the same configuration.
		_, _, _, again := execute(t, "--config", to)
		if again == nil || again.Port != 9000 || again.EnableProfiling {
			t.Errorf("the written configuration loads as %+v", again)
		}
		if st, err := os.Stat(to); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("an existing 0600 output: %v, %v", st.Mode(), err)
		}
		code, _, stderr, _ := execute(t, "--config", cfg, "--write-config-to", filepath.Join(dir, "missing", "x.yaml"))
		if code != 1 || !strings.Contains(stderr, "--write-config-to") {
			t.Errorf("unwritable: code %d, stderr %q", code, stderr)
		}
	})
	t.Run("write-config-to keeps what it writes to", func(t *testing.T) {
		// A new file is private unless --write-config-mode says
		// otherwise; a link is written through and stays; a FIFO's
		// reader gets the configuration.
		fresh := filepath.Join(dir, "fresh.yaml")
		if code, _, stderr, _ := execute(t, "--config", cfg, "--write-config-to", fresh); code != 0 {
			t.Fatalf("code %d, stderr %s", code, stderr)
		}
		if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("a new output: %v, %v, want 0600", st.Mode(), err)
		}
		shared := filepath.Join(dir, "shared.yaml")
		if code, _, stderr, _ := execute(t, "--config", cfg, "--write-config-to", shared, "--write-config-mode", "0644"); code != 0 {
			t.Fatalf("code %d, stderr %s", code, stderr)
		}
		if st, err := os.Stat(shared); err != nil || st.Mode().Perm()&^0o644 != 0 || st.Mode().Perm()&0o600 != 0o600 {
			t.Errorf("a new output with --write-config-mode 0644: %v, %v", st.Mode(), err)
		}
		link := filepath.Join(dir, "current.yaml")
		if err := os.Symlink("fresh.yaml", link); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr, _ := execute(t, "--config", cfg, "--write-config-to", link, "--output-version", "v1alpha1"); code != 0 {
			t.Fatalf("code %d, stderr %s", code, stderr)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v, %v", st.Mode(), err)
		}
		if got, _ := os.ReadFile(fresh); !strings.Contains(string(got), "v1alpha1") {
			t.Errorf("the link's target holds %s", got)
		}
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			b, _ := os.ReadFile(fifo)
			got <- b
		}()
		if code, _, stderr, _ := execute(t, "--config", cfg, "--write-config-to", fifo); code != 0 {
			t.Fatalf("code %d, stderr %s", code, stderr)
		}
		if b := <-got; !strings.Contains(string(b), "port: 9000") {
			t.Errorf("the FIFO's reader got %q", b)
		}
		for _, args := range [][]string{
			{"--explain", "--write-config-to", fresh},
			{"--explain", "--migrate-config"},
			{"--write-config-to", fresh, "--write-config-mode", "0999"},
		} {
			if code, _, stderr, _ := execute(t, append([]string{"--config", cfg}, args...)...); code != 2 || !strings.Contains(stderr, "Usage:") {
				t.Errorf("%v: code %d, stderr %s; want a usage error", args, code, stderr)
			}
		}
	})
	t.Run("output version as group/version", func(t *testing.T) {
		code, stdout, _, ran := execute(t, "--config", cfg, "--print-config", "--output-version", "component.example.strata.dev/v1alpha1")
		if code != 0 || ran != nil || !strings.Contains(stdout, "apiVersion: component.example.strata.dev/v1alpha1") {
			t.Errorf("code %d, stdout %s", code, stdout)
		}
	})
	t.Run("unknown output version", func(t *testing.T) {
		// A usage error: exit 2 and the usage, and the versions there are
		// in both spellings.
		for _, v := range []string{"v9", "component.example.strata.dev/v9", "other.example.dev/v1beta1", "v1alpha0"} {
			code, _, stderr, ran := execute(t, "--config", cfg, "--print-config", "--output-version", v)
			if code != 2 || ran != nil || !strings.Contains(stderr, "--output-version "+strconv.Quote(v)) || !strings.Contains(stderr, "Usage") {
				t.Errorf("%s: code %d, stderr %q", v, code, stderr)
			}
		}
		_, _, stderr, _ := execute(t, "--config", cfg, "--print-config", "--output-version", "v9")
		if want := "give one of v1beta1, v1alpha1, alone or as component.example.strata.dev/VERSION"; !strings.Contains(stderr, want) {
			t.Errorf("stderr %q, want %q", stderr, want)
		}
	})
}

// TestWatch reloads through Component.Watch: a valid change is applied, a
// restart-only change is reported and kept at its running value, an
// invalid one is refused.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	write := func(body string) {
		t.Helper()
		tmp := cfg + ".tmp"
		if err := os.WriteFile(tmp, []byte(head+body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg); err != nil {
			t.Fatal(err)
		}
	}
	write("enableProfiling: true\n")
	c := component(t)
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Parse([]string{"--config", cfg, "--port", "7000"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reloads := make(chan watch.Reload[*layers.Loaded[*config.ComponentConfiguration]], 10)
	w, err := c.Watch(ctx, cl, layers.WatchOptions[*config.ComponentConfiguration]{
		PollInterval: 50 * time.Millisecond,
		OnReload:     func(r watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]) { reloads <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := <-reloads; !r.Initial || r.Status != watch.StatusSuccess {
		t.Fatalf("first reload: %+v", r)
	}
	next := func() watch.Reload[*layers.Loaded[*config.ComponentConfiguration]] {
		t.Helper()
		select {
		case r := <-reloads:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no reload")
		}
		panic("unreachable")
	}
	write("enableProfiling: false\nsyncFrequency: 5m\n")
	r := next()
	got := w.Current().Object
	if r.Status != watch.StatusSuccess || got.EnableProfiling || got.Port != 7000 || got.SyncFrequency.Duration != time.Minute {
		t.Errorf("after a change: %+v (%v)", got, r.Err)
	}
	if strings.Join(w.Current().RestartRequired, ",") != "/syncFrequency" {
		t.Errorf("RestartRequired %v", w.Current().RestartRequired)
	}
	write("allowedOrigins: [not-an-origin]\n")
	if r := next(); r.Status != watch.StatusFailure || !strings.Contains(r.Err.Error(), cfg) {
		t.Errorf("an invalid change: %+v", r)
	}
	if got := w.Current().Object; got.EnableProfiling || got.Port != 7000 {
		t.Errorf("after a refused change: %+v", got)
	}
	cancel()
	<-w.Done()

	cl2, _ := c.NewCommandLine()
	if _, err := c.Watch(context.Background(), cl2, layers.WatchOptions[*config.ComponentConfiguration]{}); err == nil {
		t.Error("Watch with no file to watch started")
	}
}

// TestWatchFromLoaded starts Watch from what LoadFrom loaded with the
// same command line: the files unchanged, nothing is loaded or reported
// again and the loaded configuration is what the watcher serves; a later
// edit is loaded as any reload.
func TestWatchFromLoaded(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(head+"enableProfiling: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := component(t)
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Parse([]string{"--config", cfg, "--port", "7000"}); err != nil {
		t.Fatal(err)
	}
	loaded, err := c.LoadFrom(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Hash == "" {
		t.Fatal("LoadFrom gave no hash")
	}
	reloads := make(chan watch.Reload[*layers.Loaded[*config.ComponentConfiguration]], 10)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := c.Watch(ctx, cl, layers.WatchOptions[*config.ComponentConfiguration]{
		PollInterval: 50 * time.Millisecond,
		From:         loaded,
		OnReload:     func(r watch.Reload[*layers.Loaded[*config.ComponentConfiguration]]) { reloads <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.Current() != loaded || len(reloads) != 0 {
		t.Fatalf("started from %p, not the loaded %p; %d reports", w.Current(), loaded, len(reloads))
	}
	if err := os.WriteFile(cfg+".tmp", []byte(head+"enableProfiling: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cfg+".tmp", cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-reloads:
		if r.Status != watch.StatusSuccess || r.Initial || w.Current().Object.EnableProfiling || w.Current().Object.Port != 7000 {
			t.Errorf("after an edit: %+v, %+v", r, w.Current().Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the edit was not loaded")
	}
	cancel()
	<-w.Done()
}

// TestUsageShowsTheDefaultsInUse checks --help: a bound flag shows the
// default its scheme gives the key, not pflag's, a legacy-default flag
// both, and no line is padded.
func TestUsageShowsTheDefaultsInUse(t *testing.T) {
	c := component(t)
	c.Flags = func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
		fs := fss.FlagSet("generic")
		var port int32
		fs.Int32Var(&port, "port", 10250, "The port to serve on.")
		b.Bind("port", "/port", &port, layers.LegacyDefault())
		var profiling bool
		fs.BoolVar(&profiling, "enable-profiling", false, "Enable profiling.")
		b.Bind("enable-profiling", "/enableProfiling", &profiling)
		fs.Duration("sync-frequency", 0, "How often to sync.")
		b.Bind("sync-frequency", "/syncFrequency", nil)
		fs.Float32("qps", 5, "Queries per second.")
		b.Bind("qps", "/clientConnection/qps", nil)
		fs.String("unbound", "x", "A flag of the command's own.")
		b.NotConfiguration("the command's own", "unbound")
		b.BindLogging(fss.FlagSet("logging"), "/logging")
		return nil
	}
	cl, err := c.NewCommandLine()
	if err != nil {
		t.Fatal(err)
	}
	u := cl.Usage("mycomp")
	for _, want := range []string{
		"      --port int32\n                The port to serve on. (default 8443; 10250 without --config)\n",
		"      --enable-profiling\n                Enable profiling. (default true)\n", // pflag says false; the scheme defaults it to true
		"      --sync-frequency duration\n                How often to sync. (default 1m0s)\n",
		"      --qps float32\n                Queries per second. (default 50)\n",
		"      --unbound string\n                A flag of the command's own. (default \"x\")\n",
		"      --logging-format string\n",
		"(default \"strict\")",
	} {
		if !strings.Contains(u, want) {
			t.Errorf("usage lacks %q:\n%s", want, u)
		}
	}
	for _, line := range strings.Split(u, "\n") {
		if len(line) > 100 || strings.HasSuffix(line, " ") {
			t.Errorf("line %q is over 100 columns or padded", line)
		}
	}
}

// TestFlagsHookError fails building the command line with the hook's
// error, named.
func TestFlagsHookError(t *testing.T) {
	c := component(t)
	c.Flags = func(*cliflag.NamedFlagSets, *layers.Flags) error { return errors.New("no defaults") }
	if _, _, err := c.Load(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "its flags: no defaults") {
		t.Errorf("Load: %v", err)
	}
}

// TestOlderVersionsReadAsTheMergeVersion holds a file of a version other
// than the merge version to what one of the merge version gets: with
// --decode-mode warn or ignore an unknown field is tolerated (kubelet
// reads its file so, kubernetes#82924), and in a drop-in a null removes
// the key (RFC 7386), a feature gate left to its default (on) rather
// than turned off, a field left to what lies below.
func TestOlderVersionsReadAsTheMergeVersion(t *testing.T) {
	for _, version := range []string{"v1beta1", "v1alpha1"} {
		typeMeta := "apiVersion: component.example.strata.dev/" + version + "\nkind: ComponentConfiguration\n"
		for _, mode := range []string{"warn", "ignore"} {
			cfg := writer(t, t.TempDir())("c.yaml", typeMeta+"port: 9000\nbogus: 1\n")
			loaded, _, err := component(t).Load(context.Background(), []string{"--config", cfg, "--decode-mode", mode})
			if err != nil || loaded.Object.Port != 9000 {
				t.Errorf("%s file with an unknown field, --decode-mode %s: %v, %v", version, mode, loaded, err)
			}
		}
		write := writer(t, t.TempDir())
		cfg := write("c.yaml", head+"port: 9000\nenableProfiling: false\n")
		field := "profiling" // v1beta1 renamed it
		if version == "v1beta1" {
			field = "enableProfiling"
		}
		write("conf.d/10.conf", typeMeta+"featureGates: {BetaThing: null}\n"+field+": null\n")
		loaded, _, err := component(t).Load(context.Background(), []string{"--config", cfg, "--config-dir", filepath.Join(filepath.Dir(cfg), "conf.d")})
		if err != nil {
			t.Fatalf("%s drop-in of nulls: %v", version, err)
		}
		if on, set := loaded.Object.FeatureGates["BetaThing"]; set && !on {
			src, _ := loaded.Provenance.SourceOf("/featureGates/BetaThing")
			t.Errorf("%s drop-in removing BetaThing: the gate is off, from %s; want it left to its default", version, src)
		}
		if !loaded.Object.EnableProfiling {
			src, _ := loaded.Provenance.SourceOf("/enableProfiling")
			t.Errorf("%s drop-in removing %s: profiling off, from %s; want its default, on", version, field, src)
		}
	}
}
