package layers_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/scheme"
)

// proxyConfig is v1, the merge version and hub, of a kind whose older
// version v1alpha1 defaults the port differently, as a component does
// when a new version changes a default.
type proxyConfig struct {
	metav1.TypeMeta `json:",inline"`
	Port            int32 `json:"port,omitempty"`
	Workers         int32 `json:"workers,omitempty"`
	// Upstream is new in v1: v1alpha1 has no field for it.
	Upstream string `json:"upstream,omitempty" strata:"not-path"`
}

type proxyConfigV1alpha1 struct {
	metav1.TypeMeta `json:",inline"`
	Port            int32 `json:"port,omitempty"`
	Workers         int32 `json:"workers,omitempty"`
}

func (in *proxyConfig) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}

func (in *proxyConfigV1alpha1) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}

// proxyComponent: v1 defaults the port to 8443, v1alpha1 to 8080; both
// default workers to 4. --port is bound.
func proxyComponent(t *testing.T) *layers.Component[*proxyConfig] {
	t.Helper()
	v1 := schema.GroupVersion{Group: "proxy.example.dev", Version: "v1"}
	v1alpha1 := schema.GroupVersion{Group: "proxy.example.dev", Version: "v1alpha1"}
	kind, err := scheme.New(scheme.Config{
		Group: v1.Group, Kind: "ProxyConfig", Hub: "v1", MergeVersion: "v1",
		Versions: []scheme.Version{
			{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
				s.AddKnownTypeWithName(v1.WithKind("ProxyConfig"), &proxyConfig{})
				s.AddTypeDefaultingFunc(&proxyConfig{}, func(obj any) {
					c := obj.(*proxyConfig)
					if c.Port == 0 {
						c.Port = 8443
					}
					if c.Workers == 0 {
						c.Workers = 4
					}
				})
				return nil
			}},
			{Version: "v1alpha1", AddToScheme: func(s *runtime.Scheme) error {
				s.AddKnownTypeWithName(v1alpha1.WithKind("ProxyConfig"), &proxyConfigV1alpha1{})
				s.AddTypeDefaultingFunc(&proxyConfigV1alpha1{}, func(obj any) {
					c := obj.(*proxyConfigV1alpha1)
					if c.Port == 0 {
						c.Port = 8080
					}
					if c.Workers == 0 {
						c.Workers = 4
					}
				})
				for _, f := range []struct {
					a, b any
					fn   conversion.ConversionFunc
				}{
					{(*proxyConfigV1alpha1)(nil), (*proxyConfig)(nil), func(a, b any, _ conversion.Scope) error {
						in, out := a.(*proxyConfigV1alpha1), b.(*proxyConfig)
						out.Port, out.Workers = in.Port, in.Workers
						return nil
					}},
					{(*proxyConfig)(nil), (*proxyConfigV1alpha1)(nil), func(a, b any, _ conversion.Scope) error {
						in, out := a.(*proxyConfig), b.(*proxyConfigV1alpha1)
						out.Port, out.Workers = in.Port, in.Workers
						return nil
					}},
				} {
					if err := s.AddConversionFunc(f.a, f.b, f.fn); err != nil {
						return err
					}
				}
				return nil
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &layers.Component[*proxyConfig]{
		Name: "proxy",
		Kind: kind,
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var port int32
			fss.FlagSet("proxy").Int32Var(&port, "port", 0, "")
			b.Bind("port", "/port", &port)
			return nil
		},
	}
}

// TestFileKeepsItsVersionsDefaults loads files of two versions whose
// defaults differ: the --config file's version decides the defaults of
// what no layer sets, credited to that version; drop-ins bring only what
// they set; a flag wins.
func TestFileKeepsItsVersionsDefaults(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	old := write("old.yaml", "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nworkers: 2\n")
	cur := write("new.yaml", "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nworkers: 2\n")
	zero := write("zero.yaml", "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nport: 0\nworkers: 2\n")
	oldDropIns := filepath.Dir(write("old.d/10-workers.conf", "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nworkers: 3\n"))
	newDropIns := filepath.Dir(write("new.d/10-workers.conf", "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nworkers: 3\n"))
	for _, tc := range []struct {
		name    string
		args    []string
		port    int32
		workers int32
		source  string
	}{
		{"a v1alpha1 file", []string{"--config", old}, 8080, 2, "default proxy.example.dev/v1alpha1"},
		{"a v1 file", []string{"--config", cur}, 8443, 2, "default"},
		{"a v1alpha1 file and a v1 drop-in", []string{"--config", old, "--config-dir", newDropIns}, 8080, 3, "default proxy.example.dev/v1alpha1"},
		{"a v1 file and a v1alpha1 drop-in", []string{"--config", cur, "--config-dir", oldDropIns}, 8443, 3, "default"},
		{"a v1alpha1 drop-in alone", []string{"--config-dir", oldDropIns}, 8443, 3, "default"},
		{"a v1alpha1 file and a flag", []string{"--config", old, "--port", "9000"}, 9000, 2, "flag --port"},
		// An explicit zero v1alpha1 reads as unset: the file means 8080.
		{"a v1alpha1 file setting the port to 0", []string{"--config", zero}, 8080, 2, "file " + zero},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loaded, _, err := proxyComponent(t).Load(context.Background(), tc.args)
			if err != nil {
				t.Fatal(err)
			}
			src, _ := loaded.Provenance.SourceOf("/port")
			if got := loaded.Object; got.Port != tc.port || got.Workers != tc.workers || src.String() != tc.source {
				raw, _ := json.Marshal(got)
				t.Errorf("%s, port set by %q; want port %d, workers %d, set by %q", raw, src, tc.port, tc.workers, tc.source)
			}
		})
	}
}

// TestMigrateConfig rewrites files into the other version: what the file
// sets, no flags, and the defaults of its version that the other version
// would give another value, each named on stderr; a key the other version
// has no field for is an error naming it; with --config-dir, the drop-ins
// too.
func TestMigrateConfig(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	migrate := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr strings.Builder
		code := proxyComponent(t).Execute(context.Background(), append(args, "--migrate-config"), &stdout, &stderr,
			func(context.Context, *layers.CommandLine, *layers.Loaded[*proxyConfig]) error {
				t.Error("run called")
				return nil
			})
		return code, stdout.String(), stderr.String()
	}
	old := write("old.yaml", "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nworkers: 2\n")
	code, out, errOut := migrate(t, "--config", old, "--port", "9000")
	if want := "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nport: 8080\nworkers: 2\n"; code != 0 || out != want ||
		errOut != "proxy: --migrate-config: "+old+" keeps port: 8080 (the target version would default it to 8443)\n" {
		t.Errorf("v1alpha1 to v1: exit %d, %q (%s); want %q and the port kept", code, out, errOut, want)
	}
	zero := write("zero.yaml", "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nport: 0\nworkers: 2\n")
	if code, out, errOut = migrate(t, "--config", zero); code != 0 || out != "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nport: 8080\nworkers: 2\n" {
		t.Errorf("a v1alpha1 file setting the port to 0, which v1alpha1 reads as 8080: exit %d, %q (%s)", code, out, errOut)
	}
	cur := write("new.yaml", "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nport: 7000\n")
	code, out, errOut = migrate(t, "--config", cur, "--output-version", "v1alpha1")
	if want := "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nport: 7000\n"; code != 0 || out != want || errOut != "" {
		t.Errorf("v1 to v1alpha1: exit %d, %q (%s); want %q", code, out, errOut, want)
	}
	bare := write("bare.yaml", "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nworkers: 3\n")
	code, out, errOut = migrate(t, "--config", bare, "--output-version", "v1alpha1")
	if want := "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nport: 8443\nworkers: 3\n"; code != 0 || out != want || !strings.Contains(errOut, "keeps port: 8443 (the target version would default it to 8080)") {
		t.Errorf("a v1 file leaving the port to defaulting, to v1alpha1: exit %d, %q (%s); want %q", code, out, errOut, want)
	}
	// Drop-ins bring only what they set: they are converted, and keep
	// nothing; each output after a comment naming its file.
	dropIns := filepath.Dir(write("conf.d/10-workers.conf", "apiVersion: proxy.example.dev/v1alpha1\nkind: ProxyConfig\nworkers: 5\n"))
	code, out, errOut = migrate(t, "--config", old, "--config-dir", dropIns)
	want := "# " + old + "\napiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nport: 8080\nworkers: 2\n---\n# " + filepath.Join(dropIns, "10-workers.conf") +
		"\napiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nworkers: 5\n"
	if code != 0 || out != want {
		t.Errorf("with drop-ins: exit %d, stdout\n%s\nstderr %s\nwant\n%s", code, out, errOut, want)
	}
	into := filepath.Join(dir, "migrated.d")
	if code, _, errOut = migrate(t, "--config", old, "--config-dir", dropIns, "--write-config-to", into); code != 0 {
		t.Fatalf("with drop-ins into a directory: exit %d: %s", code, errOut)
	}
	for name, want := range map[string]string{
		"old.yaml":               "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nport: 8080\nworkers: 2\n",
		"conf.d/10-workers.conf": "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nworkers: 5\n",
	} {
		if got, err := os.ReadFile(filepath.Join(into, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	lossy := write("lossy.yaml", "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nport: 7000\nupstream: backend:80\n")
	code, out, errOut = migrate(t, "--config", lossy, "--output-version", "v1alpha1")
	if code != 1 || out != "" || !strings.Contains(errOut, lossy+`: key "/upstream" has no counterpart in proxy.example.dev/v1alpha1`) {
		t.Errorf("a key v1alpha1 cannot hold: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut = migrate(t); code != 2 || !strings.Contains(errOut, "--migrate-config rewrites the --config file and the drop-ins of --config-dir") {
		t.Errorf("without --config: exit %d, stderr %q", code, errOut)
	}
	to := filepath.Join(dir, "migrated.yaml")
	if code, out, _ = migrate(t, "--config", old, "--write-config-to", to); code != 0 || out != "" {
		t.Errorf("--write-config-to: exit %d, stdout %q", code, out)
	}
	if got, err := os.ReadFile(to); err != nil || string(got) != "apiVersion: proxy.example.dev/v1\nkind: ProxyConfig\nport: 8080\nworkers: 2\n" {
		t.Errorf("written: %q (%v)", got, err)
	}
}
