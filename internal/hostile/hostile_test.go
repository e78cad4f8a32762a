package hostile_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	config "github.com/stratacfg/strata/internal/testkind/component"
	configscheme "github.com/stratacfg/strata/internal/testkind/component/scheme"
	"github.com/stratacfg/strata/internal/testkind/component/validation"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/manifests"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/watch"
	"github.com/stratacfg/strata/zpages"
)

// component is a component of the library tests' kind, with no flags.
func component(t *testing.T) *layers.Component[*config.ComponentConfiguration] {
	t.Helper()
	kind, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	return &layers.Component[*config.ComponentConfiguration]{Name: "mycomp", Kind: kind}
}

// bounded runs fn, failing the test when it takes more than a minute (a
// hang, not a speed goal) or when the heap it holds at once, sampled
// every millisecond, grows by more than maxLive bytes. fn runs on a
// goroutine of its own: it reports with t.Error, never t.Fatal.
func bounded(t *testing.T, maxLive uint64, fn func()) {
	t.Helper()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	live := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := live()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	var peak uint64
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			peak = max(peak, live())
		case <-deadline:
			t.Fatal("still running after a minute")
		}
	}
	if peak > base && peak-base > maxLive {
		t.Errorf("held %d bytes at once, over the bound of %d", peak-base, maxLive)
	}
}

// A repository committer: a link in a synced tree never makes a reader
// load a file outside it, whoever reads the tree.
func TestCommitterLinksOut(t *testing.T) {
	top := t.TempDir()
	watchtest.WriteFiles(t, top, map[string]string{"outside.yaml": "port: 1\n"})
	for name, target := range map[string]string{
		"relative": "../../../../outside.yaml",
		"absolute": filepath.Join(top, "outside.yaml"),
		"system":   "/etc/hostname",
		"a tree":   top,
	} {
		t.Run(name, func(t *testing.T) {
			g := watchtest.NewGitSync(filepath.Join(top, name), "link") // four levels above x.yaml is top
			if err := g.WriteLinks(map[string]string{"o/a.yaml": "port: 2\n"}, map[string]string{"o/x.yaml": target}); err != nil {
				t.Fatal(err)
			}
			c := component(t)
			bounded(t, 16<<20, func() {
				// A tree served whole (the config agent's sources).
				if _, err := watch.Read(g.Path(), watch.ReadOptions{Tree: true}); !errors.Is(err, files.ErrOutside) {
					t.Errorf("a tree: %v", err)
				}
				// A component's --config, the committed link itself.
				if _, _, err := c.Load(context.Background(), []string{"--config", filepath.Join(g.Path(), "o", "x.yaml")}); !errors.Is(err, files.ErrOutside) {
					t.Errorf("--config: %v", err)
				}
				// A component's drop-in directory in the checkout.
				if _, _, err := c.Load(context.Background(), []string{"--config-dir", filepath.Join(g.Path(), "o")}); !errors.Is(err, files.ErrOutside) {
					t.Errorf("drop-ins: %v", err)
				}
				// A directory of manifests.
				dir := filepath.Join(g.Path(), "o")
				if _, err := watch.Read(dir, manifests.Watch(dir, manifests.Options{}).Read); !errors.Is(err, files.ErrOutside) {
					t.Errorf("manifests: %v", err)
				}
			})
		})
	}
}

// A repository committer: a --config or a drop-in of 200 KB whose YAML
// aliases one 64 KiB scalar 30,000 times (2 GB written out in full,
// which go-yaml's ratio guard lets through) is refused before it expands.
func TestCommitterAliasBomb(t *testing.T) {
	dir := t.TempDir()
	bomb := "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nallowedOrigins:\n- &a " +
		strings.Repeat("x", 64<<10) + "\n" + strings.Repeat("- *a\n", 30_000)
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": bomb, "d/10.yaml": bomb})
	c := component(t)
	bounded(t, 64<<20, func() {
		for _, args := range [][]string{{"--config", filepath.Join(dir, "c.yaml")}, {"--config-dir", filepath.Join(dir, "d")}} {
			if _, _, err := c.Load(context.Background(), args); err == nil || !strings.Contains(err.Error(), "alias") {
				t.Errorf("%s: %v, want the alias bomb refused", args, err)
			}
		}
	})
}

// A tenant: a value shaped like a Secret reference is a literal, never
// read, whatever namespaces the reader may read.
func TestTenantForgesAReference(t *testing.T) {
	forged := merge.Ref{Kind: "secret", Namespace: "kube-system", Name: "admin-token", Key: "token"}
	r := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: "cluster"}, Values: map[string]string{"/labels": `{"a":"b"}`}},
		&merge.Layer{Source: merge.Source{Origin: "namespace", Name: "team-a/overrides"}, Values: map[string]string{"/labels": forged.JSON()}},
	)
	read := func(context.Context, merge.Ref) ([]byte, error) {
		t.Error("a tenant's literal was read as a reference")
		return nil, nil
	}
	v, _ := r.Lookup("/labels")
	if _, ok := r.RefOf("/labels", v); ok {
		t.Error("a tenant's literal is a reference")
	}
	if _, err := r.ResolveRefs(context.Background(), []string{"team-a", "kube-system"}, read); err != nil {
		t.Error(err)
	}
	// A producer's reference to a namespace its reader may not read.
	own := &merge.Layer{Values: map[string]string{"/password": forged.JSON()}, Refs: map[string]bool{"/password": true}}
	if _, err := merge.Merge(own).ResolveRefs(context.Background(), []string{"team-a"}, read); !errors.Is(err, merge.ErrRefNamespace) {
		t.Errorf("a reference to kube-system from team-a: %v", err)
	}
}

// A tenant: a constructor's error quoting a 200 KB value is passed on cut.
func TestTenantValueInAParserError(t *testing.T) {
	type cfg struct{ V string }
	r, err := namespaced.NewDryRun(namespaced.Options[*cfg]{
		Namespace: "ops", Labels: map[string]string{"layer": "tenant"},
		Tenancy: tenancy.Policy{Overridable: []string{"s/v"}, GateKey: "s/gate", GateOpen: "on", GateClosed: "off"},
		Parsed: &namespaced.Parsed[*cfg]{New: func() *cfg { return &cfg{} }, Sections: []namespaced.Section[*cfg]{{
			Name: "s", ClusterConfigMap: "s", NamespaceConfigMap: "s", Keys: []string{"v", "gate"},
			Parse: namespaced.FromMap(func(data map[string]string) (string, error) {
				if v := data["v"]; strings.HasPrefix(v, "bad") {
					return "", fmt.Errorf("failed parsing %q", v) // the whole value, as Tekton's do
				}
				return data["v"], nil
			}, func(c *cfg, v string) { c.V = v }),
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tenant := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s", Labels: map[string]string{"layer": "tenant"}},
		Data: map[string]string{"v": "bad" + strings.Repeat("x", 200_000)}}
	cluster := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "s"}, Data: map[string]string{"gate": "on"}}
	bounded(t, 64<<20, func() {
		s, err := r.Resolve("team", []k8sruntime.Object{cluster, tenant})
		if err != nil {
			t.Error(err) // on bounded's goroutine: no Fatal
			return
		}
		ignored := s.Ignored()
		if len(ignored) != 1 || len(ignored[0].Error()) > 1024 {
			t.Errorf("ignored %d layers, in %d bytes", len(ignored), len(fmt.Sprint(ignored)))
		}
	})
}

// A network client: one request of a 720 KB Accept header costs no more
// than a small one; connections held open keep no one out.
func TestNetworkClient(t *testing.T) {
	mux := http.NewServeMux()
	zpages.Install(mux, zpages.Pages{Name: "c", Configs: func(*http.Request) (map[string]zpages.Config, error) {
		return map[string]zpages.Config{"c": {Object: []byte(`{"apiVersion":"x/v1","kind":"C"}`)}}, nil
	}})
	accept := strings.Repeat("text/html;q=0.5,", 40_000) + strings.Repeat("x/y;q=0,", 40_000) + "text/plain"
	bounded(t, 8<<20, func() {
		for range 10 {
			req := httptest.NewRequest(http.MethodGet, "/configz", nil)
			req.Header.Set("Accept", accept)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != http.StatusNotAcceptable {
				t.Errorf("a 720 KB Accept: %d", rec.Code)
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, bounded := httpserve.New(mux, ln)
	defer srv.Close()
	go srv.Serve(bounded)
	httpservetest.Siege(t, ln.Addr().String(), nil, "/statusz", http.StatusOK)
}

// Whoever writes a volume: gzip'd shards that are small on disk cannot
// together hold more than the snapshot's budget.
func TestShardsAmplify(t *testing.T) {
	dir := t.TempDir()
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(bytes.Repeat([]byte("x"), 4<<20-1))
	zw.Close()
	var paths []string
	for i := range 100 {
		p := filepath.Join(dir, fmt.Sprintf("shard-%02d", i))
		watchtest.WriteFiles(t, p, map[string]string{"config.yaml": zipped.String()})
		paths = append(paths, p)
	}
	bounded(t, watch.DefaultMaxTotalBytes+128<<20, func() { // the budget, and what the collector has yet to reclaim
		if _, err := watch.ReadContents(paths, watch.ReadOptions{}); !errors.Is(err, watch.ErrTooLarge) || !strings.Contains(err.Error(), "puts the snapshot over the limit") {
			t.Errorf("100 shards of 4 MiB: %v", err)
		}
	})
}

// Whoever names an output: --write-config-to keeps the mode of what it
// replaces and writes through a link and into a FIFO.
func TestWriteConfigTo(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	out := filepath.Join(dir, "out.yaml")
	watchtest.WriteFiles(t, dir, map[string]string{"c.yaml": "apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\n", "out.yaml": "old"})
	if err := os.Chmod(out, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("out.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(filepath.Join(dir, "fifo"))
		got <- b
	}()
	for _, to := range []string{"link.yaml", "fifo"} {
		var stderr bytes.Buffer
		if code := component(t).Execute(context.Background(), []string{"--config", cfg, "--write-config-to", filepath.Join(dir, to)}, &bytes.Buffer{}, &stderr, nil); code != 0 {
			t.Fatalf("%s: exit %d: %s", to, code, stderr.String())
		}
	}
	if st, err := os.Lstat(out); err != nil || st.Mode() != 0o600 {
		t.Errorf("the output through the link: %v, %v", st.Mode(), err)
	}
	if st, err := os.Lstat(filepath.Join(dir, "link.yaml")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	select {
	case b := <-got:
		if !bytes.Contains(b, []byte("kind: ComponentConfiguration")) {
			t.Errorf("the FIFO's reader got %q", b)
		}
	case <-time.After(time.Minute):
		t.Fatal("the FIFO's reader got nothing")
	}
	var stderr bytes.Buffer
	if code := component(t).Execute(context.Background(), []string{"--config", cfg, "--explain", "--write-config-to", out}, &bytes.Buffer{}, &stderr, nil); code != 2 {
		t.Errorf("--explain with --write-config-to: exit %d", code)
	}
}

// A node's file, or an operator's mistake: a file of 250,000 feature
// gates the component does not know, some 4 MB, is refused naming the
// first few and counting the rest, without carrying every gate through
// decoding, merging and defaulting (BenchmarkRefuseGates in
// examples/component compares its time with reading the file).
func TestNodeRefusesManyGates(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\nfeatureGates:\n")
	for i := range 250_000 {
		fmt.Fprintf(&b, "  G%06d: true\n", i)
	}
	p := filepath.Join(t.TempDir(), "gates.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := component(t)
	c.FeatureGates = validation.NewFeatureGate
	bounded(t, 256<<20, func() {
		_, _, err := c.Load(context.Background(), []string{"--config", p})
		if err == nil || !strings.Contains(err.Error(), "file "+p+": featureGates[G000000]: Invalid value: true: unrecognized feature gate: G000000") ||
			!strings.Contains(err.Error(), "249981 more unrecognized feature gates") || len(err.Error()) > 8<<10 {
			t.Errorf("Load: %.2000v", err)
		}
	})
}
