package layers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/zpages"
)

// agentConfig is a node agent's configuration, with a field that belongs
// to one instance and one field for each of two operating systems.
type agentConfig struct {
	metav1.TypeMeta `json:",inline"`
	Port            int32  `json:"port,omitempty"`
	NodeName        string `json:"nodeName,omitempty" strata:"instance-only,not-path"`
	CgroupDriver    string `json:"cgroupDriver,omitempty" strata:"os=linux,not-path"`
	PriorityClass   string `json:"priorityClass,omitempty" strata:"os=windows,not-path"`
}

func (in *agentConfig) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}

// agentComponent: every OS field is defaulted and validated whatever the
// OS, as generated defaulters and validators do; the component runs on
// goos. --node-name and --cgroup-driver are bound.
func agentComponent(t *testing.T, goos string, markers ...map[string]validation.Marker) *layers.Component[*agentConfig] {
	t.Helper()
	gv := schema.GroupVersion{Group: "agent.example.dev", Version: "v1"}
	var declared map[string]validation.Marker
	if len(markers) > 0 {
		declared = markers[0]
	}
	kind, err := scheme.New(scheme.Config{
		Group: gv.Group, Kind: "AgentConfig", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", Markers: declared, AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypeWithName(gv.WithKind("AgentConfig"), &agentConfig{})
			s.AddTypeDefaultingFunc(&agentConfig{}, func(obj any) {
				c := obj.(*agentConfig)
				if c.Port == 0 {
					c.Port = 10250
				}
				if c.CgroupDriver == "" {
					c.CgroupDriver = "cgroupfs"
				}
				if c.PriorityClass == "" {
					c.PriorityClass = "NORMAL"
				}
			})
			return nil
		}}},
		Validate: scheme.Validator(func(c *agentConfig) field.ErrorList {
			var errs field.ErrorList
			if c.CgroupDriver != "cgroupfs" && c.CgroupDriver != "systemd" {
				errs = append(errs, field.NotSupported(field.NewPath("cgroupDriver"), c.CgroupDriver, []string{"cgroupfs", "systemd"}))
			}
			if c.PriorityClass != "NORMAL" && c.PriorityClass != "HIGH" {
				errs = append(errs, field.NotSupported(field.NewPath("priorityClass"), c.PriorityClass, []string{"NORMAL", "HIGH"}))
			}
			return errs
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &layers.Component[*agentConfig]{
		Name: "agent",
		Kind: kind,
		GOOS: goos,
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var node, driver string
			fs := fss.FlagSet("agent")
			fs.StringVar(&node, "node-name", "", "")
			b.Bind("node-name", "/nodeName", &node)
			fs.StringVar(&driver, "cgroup-driver", "", "")
			b.Bind("cgroup-driver", "/cgroupDriver", &driver)
			return nil
		},
	}
}

// TestInstanceOnlyFields: a field marked instance-only is refused in the
// files every instance reads, and taken from --instance-config and flags.
func TestInstanceOnlyFields(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	shared := write("agent.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\nnodeName: node-a\n")
	plain := write("plain.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\nport: 9000\n")
	dropIns := filepath.Dir(write("agent.d/10-node.conf", "nodeName: node-a\n"))
	instance := write("instance.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\nnodeName: node-b\n")

	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"in --config", []string{"--config", shared}, "file " + shared + ": field nodeName is instance-only: set it in --instance-config or with a flag"},
		{"in a drop-in", []string{"--config", plain, "--config-dir", dropIns}, "drop-in " + filepath.Join(dropIns, "10-node.conf") + ": field nodeName is instance-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := agentComponent(t, "linux").Load(context.Background(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error containing %q", err, tc.err)
			}
		})
	}
	for _, tc := range []struct {
		name, source string
		args         []string
		node         string
	}{
		{"from --instance-config", "instance-config " + instance, []string{"--config", plain, "--instance-config", instance}, "node-b"},
		{"from a flag", "flag --node-name", []string{"--config", plain, "--node-name", "node-c"}, "node-c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loaded, _, err := agentComponent(t, "linux").Load(context.Background(), tc.args)
			if err != nil {
				t.Fatal(err)
			}
			src, _ := loaded.Provenance.SourceOf("/nodeName")
			if loaded.Object.NodeName != tc.node || src.String() != tc.source {
				t.Errorf("nodeName %q from %q, want %q from %q", loaded.Object.NodeName, src, tc.node, tc.source)
			}
		})
	}
}

// TestOSFields: a field of one operating system is defaulted and
// validated only there, and setting it elsewhere is an error naming the
// field and both systems.
func TestOSFields(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	plain := write("plain.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\n")
	linux := write("linux.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\ncgroupDriver: systemd\n")
	windows := write("windows.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\npriorityClass: HIGH\n")
	badLinux := write("bad-linux.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\ncgroupDriver: sometimes\n")

	for _, tc := range []struct {
		goos, file           string
		driver, class        string
		driverFrom, classSet string
	}{
		{"linux", plain, "cgroupfs", "", "default", ""},
		{"windows", plain, "", "NORMAL", "", "default"},
		{"linux", linux, "systemd", "", "file " + linux, ""},
		{"windows", windows, "", "HIGH", "", "file " + windows},
		{"darwin", plain, "", "", "", ""},
	} {
		t.Run(tc.goos+" "+filepath.Base(tc.file), func(t *testing.T) {
			loaded, _, err := agentComponent(t, tc.goos).Load(context.Background(), []string{"--config", tc.file})
			if err != nil {
				t.Fatal(err)
			}
			c := loaded.Object
			if c.CgroupDriver != tc.driver || c.PriorityClass != tc.class {
				t.Errorf("cgroupDriver %q, priorityClass %q; want %q, %q", c.CgroupDriver, c.PriorityClass, tc.driver, tc.class)
			}
			for key, want := range map[string]string{"/cgroupDriver": tc.driverFrom, "/priorityClass": tc.classSet} {
				src, ok := loaded.Provenance.SourceOf(key)
				if got := src.String(); ok != (want != "") || got != want && want != "" {
					t.Errorf("%s from %q (%t), want %q", key, got, ok, want)
				}
			}
		})
	}
	for _, tc := range []struct {
		name, goos string
		args       []string
		err        string
	}{
		{"a windows field in a file on linux", "linux", []string{"--config", windows}, "file " + windows + ": field priorityClass is for windows only, and this system is linux"},
		{"a linux field in a file on windows", "windows", []string{"--config", linux}, "file " + linux + ": field cgroupDriver is for linux only, and this system is windows"},
		{"a linux field from a flag on windows", "windows", []string{"--config", plain, "--cgroup-driver", "systemd"}, "flag --cgroup-driver: field cgroupDriver is for linux only, and this system is windows"},
		{"an invalid linux field on linux", "linux", []string{"--config", badLinux}, `cgroupDriver: Unsupported value: "sometimes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := agentComponent(t, tc.goos).Load(context.Background(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want an error containing %q", err, tc.err)
			}
		})
	}
}

// TestSkipForeignOS shares one file between a linux and a windows host,
// as a mixed fleet does: each skips the other's field, never applies it,
// and says so in Loaded.Skipped and the explanation; a flag that sets
// another OS's field is still refused.
func TestSkipForeignOS(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	shared := write("shared.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\ncgroupDriver: systemd\npriorityClass: HIGH\nport: 9000\n")
	dropIns := filepath.Dir(write("agent.d/10.conf", "priorityClass: NORMAL\n"))
	for _, tc := range []struct {
		goos, driver, class string
		skipped             []string
	}{
		{"linux", "systemd", "", []string{
			"file " + shared + ": field priorityClass is for windows only, and this system is linux",
			"drop-in " + filepath.Join(dropIns, "10.conf") + ": field priorityClass is for windows only, and this system is linux",
		}},
		{"windows", "", "NORMAL", []string{"file " + shared + ": field cgroupDriver is for linux only, and this system is windows"}},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			c := agentComponent(t, tc.goos)
			c.SkipForeignOS = true
			loaded, _, err := c.Load(context.Background(), []string{"--config", shared, "--config-dir", dropIns})
			if err != nil {
				t.Fatal(err)
			}
			if o := loaded.Object; o.CgroupDriver != tc.driver || o.PriorityClass != tc.class || o.Port != 9000 {
				t.Errorf("cgroupDriver %q, priorityClass %q, port %d; want %q, %q, 9000", o.CgroupDriver, o.PriorityClass, o.Port, tc.driver, tc.class)
			}
			if !slices.Equal(loaded.Skipped, tc.skipped) {
				t.Errorf("skipped %q, want %q", loaded.Skipped, tc.skipped)
			}
			e, err := c.Explain(loaded, c.Kind.MergeVersion())
			if err != nil || !slices.Equal(e.Skipped, tc.skipped) {
				t.Errorf("explanation skips %q (%v), want %q", e.Skipped, err, tc.skipped)
			}
		})
	}
	c := agentComponent(t, "windows")
	c.SkipForeignOS = true
	if _, _, err := c.Load(context.Background(), []string{"--config", shared, "--cgroup-driver", "cgroupfs"}); err == nil || !strings.Contains(err.Error(), "flag --cgroup-driver: field cgroupDriver is for linux only, and this system is windows") {
		t.Errorf("a linux field from a flag on windows: %v", err)
	}
}

// TestZPagesErrorShowsWhatIsNotSecret shows on /statusz the errors of a
// refused reload but for those of a secret field, which say only which
// field was refused; an error that is no validation's says where to read
// why; a kind with no secret field shows its errors whole.
func TestZPagesErrorShowsWhatIsNotSecret(t *testing.T) {
	c := agentComponent(t, "linux", map[string]validation.Marker{"/nodeName": validation.Secret})
	err := fmt.Errorf("invalid configuration:\n%w", validation.ErrorList{
		{Err: field.NotSupported(field.NewPath("priorityClass"), "LOW", []string{"NORMAL", "HIGH"}), Key: "/priorityClass"},
		{Err: field.Invalid(field.NewPath("nodeName"), "hunter2", "must be a DNS name"), Key: "/nodeName"},
	})
	got := c.StatuszError(err)
	if !strings.Contains(got, `priorityClass: Unsupported value: "LOW"`) || strings.Contains(got, "hunter2") || !strings.Contains(got, `nodeName: Invalid value: "CLASSIFIED": refused; why is in the log (the value is secret)`) {
		t.Errorf("a validation's errors: %q", got)
	}
	if got := c.StatuszError(fmt.Errorf("decoding: %q is no number", "hunter2")); strings.Contains(got, "hunter2") || !strings.Contains(got, "why is in the log") {
		t.Errorf("another error: %q", got)
	}
	if got := agentComponent(t, "linux").StatuszError(err); !strings.Contains(got, "hunter2") {
		t.Errorf("with no secret field: %q", got)
	}
	if got := c.StatuszError(nil); got != "" {
		t.Errorf("no error: %q", got)
	}
}

// writer returns a function that writes a file under dir and returns its
// path.
func writer(t *testing.T, dir string) func(name, body string) string {
	return func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// TestZPagesConcurrently reads the z-pages of a loaded component from
// several goroutines at once, as scrapers do; the race detector watches
// the shared configuration.
func TestZPagesConcurrently(t *testing.T) {
	dir := t.TempDir()
	file := writer(t, dir)("agent.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\nport: 9000\n")
	comp := agentComponent(t, "linux")
	loaded, cl, err := comp.Load(context.Background(), []string{"--config", file, "--node-name", "n1"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	zpages.Install(mux, comp.ZPages(cl, func() *layers.Loaded[*agentConfig] { return loaded }))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := []string{"/configz", "/flagz", "/statusz"}[i%3]
			code, _, body := watchtest.Get(t, srv.URL+path, "text/plain")
			if code != http.StatusOK {
				t.Errorf("%s: %d %s", path, code, body)
			}
			if path == "/flagz" && !strings.Contains(body, "\nnode-name=n1 (command line, sets /nodeName)\n") {
				t.Errorf("/flagz:\n%s", body)
			}
			if path == "/configz" && !strings.Contains(body, "\n/port=9000 (file "+file+")\n") {
				t.Errorf("/configz:\n%s", body)
			}
		}()
	}
	wg.Wait()
}

// TestExplainClassifiesSecrets: --explain shows a field marked secret as
// the z-pages do, CLASSIFIED, in the configuration and in the values the
// layers below set; its provenance is shown whole.
func TestExplainClassifiesSecrets(t *testing.T) {
	write := writer(t, t.TempDir())
	file := write("a.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\nport: 9000\n")
	instance := write("instance.yaml", "apiVersion: agent.example.dev/v1\nkind: AgentConfig\nnodeName: lower-hunter2\n")
	c := agentComponent(t, "linux", map[string]validation.Marker{"/nodeName": validation.Secret})
	loaded, _, err := c.Load(context.Background(), []string{"--config", file, "--instance-config", instance, "--node-name", "upper-hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Explain(loaded, c.Kind.MergeVersion())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(e)
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(e.Config), `"nodeName":"CLASSIFIED"`) || !strings.Contains(string(e.Config), `"port":9000`) {
		t.Errorf("--explain of a secret field: %s", out)
	}
	if p := e.Provenance["/nodeName"]; len(p.Shadowed) != 1 || string(p.ShadowedValues[0]) != `"CLASSIFIED"` {
		t.Errorf("provenance of /nodeName: %+v", p)
	}
}
