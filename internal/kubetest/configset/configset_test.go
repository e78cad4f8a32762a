// Package configset_test publishes sets of ConfigMaps to the real
// kube-apiserver and reads them as pods do, each ConfigMap a volume that
// kubelet's own AtomicWriter updates on its own, in random order and
// with delays: watch/configset's producer and check, and prow's own
// updateconfig with the check meant for it. It needs what `make tools`
// builds, and fails naming it when that is missing.
package configset_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/watch"
	"github.com/stratacfg/strata/watch/configset"
)

var server *kubetest.Server

// configagent is examples/configagent, built for the tests of its publish
// and --manifest.
var configagent string

func TestMain(m *testing.M) {
	os.Exit(kubetest.MainWithCommand(m, &server, "github.com/stratacfg/strata/examples/configagent", "configagent", &configagent))
}

var seq atomic.Int64

func namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("ci-%d", seq.Add(1))
	_, err := server.Client(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// served is what a replica serves: the publish each file was last changed
// by, by file name.
type served struct {
	publish  int            // the newest publish among the files
	files    map[string]int // file → the publish that wrote it
	versions []string       // the parts' VERSION markers, where they have one
}

// content is a file's content as publish p writes it.
func content(name string, p int) string { return fmt.Sprintf("name: %s\npublish: %d\n", name, p) }

// publishOf reads back the publish a file's content names.
func publishOf(data []byte) int {
	_, v, _ := strings.Cut(string(data), "publish: ")
	n, _ := strconv.Atoi(strings.TrimSpace(v))
	return n
}

// replica is one pod: its volumes, kubelet projecting them, and a watcher
// reading them as one set.
type replica struct {
	w *watch.Watcher[*served]
}

func startReplica(t *testing.T, ctx context.Context, ns string, volumes []string, maxDelay time.Duration, opts func(paths map[string]string) watch.Options[*served]) *replica {
	t.Helper()
	o := opts(kubetest.NewKubelet(t, server.Client(t), ns, volumes, maxDelay).Paths)
	w, err := watch.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &replica{w: w}
}

// load reads what the parts hold, skipping the targets and names given.
func load(c *watch.Contents, skip func(target, name string) bool) *served {
	s := &served{files: map[string]int{}}
	for _, g := range c.Generations {
		for _, f := range g.Files {
			if skip(g.Path, f.Name) {
				continue
			}
			p := publishOf(f.Data)
			s.files[f.Name] = p
			s.publish = max(s.publish, p)
		}
	}
	return s
}

// mixed says whether s is not the tree of the publish it names: some file
// older or newer than that publish left it.
func mixed(s *served, want map[int]map[string]int) bool {
	w, ok := want[s.publish]
	if !ok || len(w) != len(s.files) {
		return true
	}
	for name, p := range w {
		if s.files[name] != p {
			return true
		}
	}
	return false
}

// TestManifestSetsUnderKubelet publishes 200 times with configset and
// reads with three replicas: none ever serves a mixed set, and every
// publish reaches every replica.
func TestManifestSetsUnderKubelet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t)
	client := server.Client(t)
	o := configset.Options{Namespace: ns, Manifest: "ci-config", Parts: []string{"ci-config-0", "ci-config-1", "ci-config-2", "ci-config-3"}}
	src := t.TempDir()
	const files = 40
	tree := map[string]int{}
	for i := range files {
		tree[fmt.Sprintf("c%02d.yaml", i)] = 1
	}
	writeTree := func(p int, names []string) {
		for _, n := range names {
			tree[n] = p
			if err := os.WriteFile(filepath.Join(src, n), []byte(content(n, p)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range tree {
			if !yield(n) {
				return
			}
		}
	})
	writeTree(1, names)
	want := map[int]map[string]int{}
	publish := func(p int) {
		t.Helper()
		if _, err := configset.Publish(ctx, client.CoreV1(), src, o); err != nil {
			t.Fatalf("publish %d: %v", p, err)
		}
		want[p] = map[string]int{}
		for n, at := range tree {
			want[p][n] = at
		}
	}
	publish(1)

	var mu sync.Mutex
	mixedSeen := 0
	volumes := append([]string{o.Manifest}, o.Parts...)
	var replicas []*replica
	for range 3 {
		replicas = append(replicas, startReplica(t, ctx, ns, volumes, 40*time.Millisecond, func(paths map[string]string) watch.Options[*served] {
			var parts []string
			for _, p := range o.Parts {
				parts = append(parts, paths[p])
			}
			return watch.Options[*served]{
				Paths:      append(parts, paths[o.Manifest]),
				Consistent: configset.Check(paths[o.Manifest], parts...),
				Load: func(_ context.Context, c *watch.Contents) (*served, error) {
					return load(c, func(target, _ string) bool { return target == paths[o.Manifest] }), nil
				},
				OnReload: func(r watch.Reload[*served]) {
					if r.Status == watch.StatusSuccess {
						mu.Lock()
						defer mu.Unlock()
						if mixed(r.Value, want) {
							mixedSeen++
							t.Errorf("served a mixed set: %v", r.Value.files)
						}
					}
				},
			}
		}))
	}
	waitServed := func(p int) time.Duration {
		t.Helper()
		start := time.Now()
		if !watchtest.Until(20*time.Second, func() bool {
			for _, r := range replicas {
				if s := r.w.Current(); s == nil || s.publish != p {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("publish %d did not reach every replica in 20s", p)
		}
		return time.Since(start)
	}
	waitServed(1)

	// Each publish changes files of one part, of several, or of all,
	// as merges do; the replicas' kubelets update each volume on its own.
	var took []time.Duration
	const publishes = 200
	for p := 2; p <= publishes+1; p++ {
		var changed []string
		switch p % 3 {
		case 0:
			changed = []string{names[rand.N(len(names))]}
		case 1:
			for _, n := range names {
				if rand.N(4) == 0 {
					changed = append(changed, n)
				}
			}
			if len(changed) == 0 {
				changed = names[:1]
			}
		default:
			changed = names
		}
		mu.Lock()
		writeTree(p, changed)
		publish(p)
		mu.Unlock()
		took = append(took, waitServed(p))
	}
	slices.Sort(took)
	t.Logf("%d publishes, 3 replicas: publish to every replica serving p50 %s, p99 %s, max %s; mixed sets served: %d",
		publishes, took[len(took)/2], took[len(took)*99/100], took[len(took)-1], mixedSeen)
}

// prowUpdate runs prow's own updateconfig (bin/prow-updateconfig) on
// the merge of changed files at sha.
func prowUpdate(t *testing.T, ns, root string, parts []string, sha string, bootstrap bool, changed ...string) {
	t.Helper()
	args := []string{"-kubeconfig", server.Kubeconfig, "-namespace", ns, "-root", root, "-partitions", strings.Join(parts, ","), "-sha", sha}
	if bootstrap {
		args = append(args, "-bootstrap")
	}
	out, err := exec.Command(watchtest.Tool(t, "prow-updateconfig"), append(args, changed...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("prow-updateconfig %s: %v\n%s", sha, err, out)
	}
}

// TestProwUpdateconfigUnderKubelet publishes with prow's own updateconfig,
// as merges do: each merge writes its files, and VERSION, into the
// partitions they hash to, and only those. Read with MarkersMove and a
// settle time, as configagent --version-stamps touched reads, every merge
// is served, none is a failure, every part served holds one merge's
// content, and prow's bootstrapper writing an older commit is reported
// as a rollback.
func TestProwUpdateconfigUnderKubelet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t)
	parts := []string{"ci-config-0", "ci-config-1", "ci-config-2", "ci-config-3"}
	src := t.TempDir()
	names := make([]string, 24)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d.yaml", i)
		if err := os.WriteFile(filepath.Join(src, names[i]), []byte(content(names[i], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prowUpdate(t, ns, src, parts, "sha1", true)
	trees := map[int]map[string]int{1: {}} // publish → file → the publish that wrote it
	for _, n := range names {
		trees[1][n] = 1
	}

	// Only the partitions a merge touched hold its commit.
	versions := func() map[string]string {
		out := map[string]string{}
		for _, p := range parts {
			cm, err := server.Client(t).CoreV1().ConfigMaps(ns).Get(ctx, p, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out[p] = cm.Data["VERSION"]
		}
		return out
	}

	var mu sync.Mutex
	var statuses []string
	var rollbacks []watch.Rollback
	var late atomic.Bool // a merge handled late: a part holds files newer than its VERSION
	r := startReplica(t, ctx, ns, parts, 40*time.Millisecond, func(paths map[string]string) watch.Options[*served] {
		var targets []string
		for _, p := range parts {
			targets = append(targets, paths[p])
		}
		return watch.Options[*served]{
			Paths:      targets,
			Settle:     300 * time.Millisecond,
			Consistent: watch.MarkersMove("VERSION"),
			Read: watch.ReadOptions{Select: func(rel string) string {
				if strings.HasPrefix(rel, ".") {
					return "hidden"
				}
				return ""
			}},
			Load: func(_ context.Context, c *watch.Contents) (*served, error) {
				// Every part holds what merges wrote in order: its files
				// each name a publish no newer than its VERSION.
				for _, g := range c.Generations {
					var version string
					newest := 0
					for _, f := range g.Files {
						if f.Name == "VERSION" {
							version = string(f.Data)
						} else {
							newest = max(newest, publishOf(f.Data))
						}
					}
					if v, _ := strconv.Atoi(strings.TrimPrefix(version, "sha")); version != "" && newest > v && !late.Load() {
						return nil, fmt.Errorf("%s holds publish %d under VERSION %s: two merges in one part", g.Path, newest, version)
					}
				}
				s := load(c, func(_, name string) bool { return name == "VERSION" })
				for _, g := range c.Generations {
					for _, f := range g.Files {
						if f.Name == "VERSION" {
							s.versions = append(s.versions, string(f.Data))
						}
					}
				}
				return s, nil
			},
			OnReload: func(r watch.Reload[*served]) {
				mu.Lock()
				defer mu.Unlock()
				statuses = append(statuses, r.Status)
				rollbacks = append(rollbacks, r.Rollbacks...)
			},
		}
	})
	current := func(p int) bool {
		s := r.w.Current()
		return s != nil && s.publish == p
	}
	if !watchtest.Until(20*time.Second, func() bool { return current(1) }) {
		t.Fatal("the bootstrap was not served")
	}
	for p := 2; p <= 31; p++ {
		changed := []string{names[rand.N(len(names))]}
		if p%5 == 0 {
			changed = names // a merge that touches every partition
		}
		trees[p] = maps.Clone(trees[p-1])
		for _, n := range changed {
			trees[p][n] = p
			if err := os.WriteFile(filepath.Join(src, n), []byte(content(n, p)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sha := "sha" + strconv.Itoa(p)
		prowUpdate(t, ns, src, parts, sha, false, changed...)
		touched := map[string]bool{}
		for _, n := range changed {
			touched[parts[configset.PartOf(n, len(parts))]] = true
		}
		for part, v := range versions() {
			if (v == sha) != touched[part] {
				t.Fatalf("merge %d: %s holds VERSION %s; touched: %v", p, part, v, touched[part])
			}
		}
		if !watchtest.Until(20*time.Second, func() bool { return current(p) }) {
			t.Fatalf("merge %d was not served", p)
		}
	}
	// prow's config-bootstrapper over the ConfigMaps as they are deletes
	// VERSION from every partition (Update counts it among the stale
	// keys): still served.
	prowUpdate(t, ns, src, parts, "sha31", true)
	for part, v := range versions() {
		if v != "" {
			t.Fatalf("after the bootstrapper, %s holds VERSION %q", part, v)
		}
	}
	if !watchtest.Until(20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(statuses) > 0 && statuses[len(statuses)-1] == watch.StatusSuccess && r.w.Hash() != "" && !slices.Contains(r.w.Current().versions, "sha31")
	}) {
		t.Fatalf("the set without markers was not served: %v", statuses)
	}
	// updateconfig handling merge 5 late writes it again over a partition
	// that had moved on: a rollback, reported.
	late.Store(true)
	if err := os.WriteFile(filepath.Join(src, names[0]), []byte(content(names[0], trees[5][names[0]])), 0o644); err != nil {
		t.Fatal(err)
	}
	prowUpdate(t, ns, src, parts, "sha5", false, names[0])
	if !watchtest.Until(20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(rollbacks) > 0
	}) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("a late merge was not reported as a rollback: statuses %v", statuses)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range statuses {
		if s == watch.StatusFailure {
			t.Fatalf("a failure among the reloads: %v", statuses)
		}
	}
	t.Logf("30 merges by prow's updateconfig, a bootstrap and a late merge: reloads %d, rollbacks reported %d (%s)", len(statuses), len(rollbacks), rollbacks[0])
}

func ciOperatorConfig(repo string, rev int) string {
	return fmt.Sprintf("zz_generated_metadata:\n  org: o\n  repo: %s\n  branch: main\nrev: %d\n", repo, rev)
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConfigagentPublishServeVerify drives configagent's commands as an
// operator would: publish a checkout as a set, two replicas serving it
// with --manifest from volumes kubelet updates, a second publish reaching
// both, and verify saying so.
func TestConfigagentPublishServeVerify(t *testing.T) {
	ns := namespace(t)
	src := t.TempDir()
	write := func(rev int) {
		for i := range 10 {
			dir := filepath.Join(src, "o", fmt.Sprintf("r%d", i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("o-r%d-main.yaml", i)), []byte(ciOperatorConfig(fmt.Sprintf("r%d", i), rev)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish := func(args ...string) (int, string, string) {
		cmd := exec.Command(configagent, append([]string{"publish"}, args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return code, stdout.String(), stderr.String()
	}
	args := []string{"--dir", src, "--kubeconfig", server.Kubeconfig, "--namespace", ns, "--manifest", "ci-config", "--part", "ci-config-0", "--part", "ci-config-1"}
	if code, _, stderr := publish(args[:6]...); code != 2 || !strings.Contains(stderr, "--part are required") {
		t.Fatalf("publish without its parts: exit %d, %s", code, stderr)
	}
	write(1)
	code, stdout, stderr := publish(args...)
	if code != 0 || !strings.HasPrefix(stdout, `{"generation":1,"parts":{"ci-config-0":"sha256:`) {
		t.Fatalf("publish: exit %d, %s %s", code, stdout, stderr)
	}

	volumes := []string{"ci-config", "ci-config-0", "ci-config-1"}
	var bases []string
	var verifies []func(want int) // each replica's own: their paths differ
	for range 2 {
		paths := kubetest.NewKubelet(t, server.Client(t), ns, volumes, 40*time.Millisecond).Paths
		addr := watchtest.FreeAddr(t)
		cmd := exec.Command(configagent, "--source", paths["ci-config-0"], "--source", paths["ci-config-1"], "--manifest", paths["ci-config"], "--listen", addr, "--settle", "0")
		var out watchtest.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(os.Interrupt)
			if err := cmd.Wait(); err != nil {
				t.Errorf("configagent: %v\n%s", err, out.String())
			}
		})
		bases = append(bases, "http://"+addr)
		if !watchtest.Until(20*time.Second, func() bool { c, _ := httpGet("http://" + addr + "/readyz"); return c == 200 }) {
			t.Fatalf("a replica is not ready:\n%s", out.String())
		}
		verify := func(want int) {
			t.Helper()
			cmd := exec.Command(configagent, "verify", "--source", paths["ci-config-0"]+"=ci-config-0", "--source", paths["ci-config-1"]+"=ci-config-1",
				"--manifest", paths["ci-config"]+"=ci-config", "--kubeconfig", server.Kubeconfig, "--namespace", ns, "--replica", "http://"+addr+"/metrics")
			b, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != want {
				t.Fatalf("verify: exit %d (%v), want %d:\n%s", code, err, want, b)
			}
		}
		verify(0)
		verifies = append(verifies, verify)
	}
	for _, base := range bases {
		if c, body := httpGet(base + "/config?org=o&repo=r3&branch=main-feature"); c != 200 || !strings.Contains(body, "rev: 1") {
			t.Fatalf("a feature branch of main: %d %s", c, body)
		}
	}
	write(2)
	if code, stdout, stderr := publish(args...); code != 0 || !strings.HasPrefix(stdout, `{"generation":2,`) {
		t.Fatalf("second publish: exit %d, %s %s", code, stdout, stderr)
	}
	for _, base := range bases {
		if !watchtest.Until(20*time.Second, func() bool {
			for i := range 10 {
				if _, body := httpGet(fmt.Sprintf("%s/config?org=o&repo=r%d&branch=main", base, i)); !strings.Contains(body, "rev: 2") {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("%s does not serve the second publish", base)
		}
	}
	for _, verify := range verifies {
		verify(0)
	}
}
