package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/httpserve/httpservetest"
	"github.com/stratacfg/strata/internal/watchtest"
)

// ciConfig is a ci-operator configuration of org/repo@branch at
// generation gen.
func ciConfig(org, repo, branch, variant string, gen int) string {
	v := ""
	if variant != "" {
		v = "\n  variant: " + variant
	}
	return fmt.Sprintf(`build_root:
  image_stream_tag:
    name: release
    namespace: openshift
    tag: golang-1.22
tests:
- as: unit
  commands: make test GENERATION=%d
  container:
    from: src
zz_generated_metadata:
  org: %s
  repo: %s
  branch: %s%s
`, gen, org, repo, branch, v)
}

// generationOf returns the generation a served configuration holds.
func generationOf(body string) int {
	_, rest, _ := strings.Cut(body, "GENERATION=")
	n, _ := strconv.Atoi(strings.Fields(rest)[0])
	return n
}

func compressed(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// agentRun is an agent running in the test's process.
type agentRun struct {
	base           string
	stdout, stderr *watchtest.Buffer
	code           chan int
	cancel         context.CancelFunc
}

// startAgent runs the command with args and --listen, and waits until it
// serves /healthz.
func startAgent(t *testing.T, args ...string) *agentRun {
	t.Helper()
	addr := watchtest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	a := &agentRun{base: "http://" + addr, stdout: &watchtest.Buffer{}, stderr: &watchtest.Buffer{}, code: make(chan int, 1), cancel: cancel}
	go func() { a.code <- run(ctx, append(args, "--listen", addr), nil, a.stdout, a.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-a.code:
		case <-time.After(10 * time.Second):
			t.Error("the agent did not stop")
		}
	})
	a.waitFor(t, "/healthz", http.StatusOK)
	return a
}

// get returns the status, the generation header and the body of path.
func (a *agentRun) get(t *testing.T, path string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(a.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Config-Generation"), string(body)
}

// waitFor waits until path answers code.
func (a *agentRun) waitFor(t *testing.T, path string, code int) {
	t.Helper()
	if watchtest.Until(20*time.Second, func() bool {
		resp, err := http.Get(a.base + path)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == code
	}) {
		return
	}
	t.Fatalf("%s did not answer %d within 20s; stderr:\n%s", path, code, a.stderr.String())
}

// waitServes waits until path serves generation gen.
func (a *agentRun) waitServes(t *testing.T, path string, gen int) {
	t.Helper()
	if watchtest.Until(20*time.Second, func() bool {
		code, _, body := a.get(t, path)
		return code == http.StatusOK && generationOf(body) == gen
	}) {
		return
	}
	t.Fatalf("%s did not serve generation %d within 20s; stdout:\n%s", path, gen, a.stdout.String())
}

// linesWhen returns the JSON lines printed once done says they are all
// there, or after 10 s: a snapshot is served before its line is printed.
func (a *agentRun) linesWhen(t *testing.T, done func([]line) bool) []line {
	t.Helper()
	var ls []line
	watchtest.Until(10*time.Second, func() bool { ls = a.lines(t); return done(ls) })
	return ls
}

// lastSucceeded reports whether the last line is a success.
func lastSucceeded(ls []line) bool { return len(ls) > 0 && ls[len(ls)-1].Status == "success" }

// lines returns the JSON lines printed so far.
func (a *agentRun) lines(t *testing.T) []line {
	t.Helper()
	var out []line
	sc := bufio.NewScanner(strings.NewReader(a.stdout.String()))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

func count(ls []line, status string) int {
	n := 0
	for _, l := range ls {
		if l.Status == status {
			n++
		}
	}
	return n
}

// shard is one ConfigMap of gzip'd configurations with a VERSION, as
// prow's updateconfig writes it, mounted by kubelet's AtomicWriter.
func shardPayload(t testing.TB, repos []string, gen int) map[string][]byte {
	out := map[string][]byte{"VERSION": []byte(strconv.Itoa(gen) + "\n")}
	for _, repo := range repos {
		out["org-"+repo+"-main.yaml"] = compressed(t, ciConfig("org", repo, "main", "", gen))
	}
	return out
}

// TestShardsUnderKubeletWriter serves two shards that kubelet's real
// AtomicWriter updates one at a time, in random order, gzip'd, while
// clients read both: every response of one generation holds one version
// of both shards, never a mix; the split states are pending, never
// failures; the final version is served.
func TestShardsUnderKubeletWriter(t *testing.T) {
	const updates = 40
	root := t.TempDir()
	shards := map[string][]string{"a": {"alpha", "beta"}, "b": {"gamma", "delta"}}
	writers := map[string]*watchtest.KubeletWriter{}
	for name, repos := range shards {
		dir := filepath.Join(root, name)
		watchtest.WriteFiles(t, dir, nil)
		writers[name] = watchtest.NewKubeletWriter(t, dir)
		if err := writers[name].TryWriteBinary(nil, shardPayload(t, repos, 1)); err != nil {
			t.Fatal(err)
		}
	}
	a := startAgent(t, "--source", filepath.Join(root, "a"), "--source", filepath.Join(root, "b"),
		"--version-key", "VERSION", "--settle", "0", "--poll-interval", "200ms")
	a.waitFor(t, "/readyz", http.StatusOK)

	var (
		stop    atomic.Bool
		mu      sync.Mutex
		seen    = map[string]int{} // generation header → the version it served
		served  atomic.Int64
		readers sync.WaitGroup
	)
	for _, repo := range []string{"alpha", "gamma"} { // one in each shard
		readers.Go(func() {
			for !stop.Load() {
				code, gen, body := a.get(t, "/config?org=org&repo="+repo+"&branch=main")
				if code != http.StatusOK {
					t.Errorf("%s: %d %s", repo, code, body)
					return
				}
				v := generationOf(body)
				mu.Lock()
				if prev, ok := seen[gen]; ok && prev != v {
					t.Errorf("snapshot %s served version %d and %d: a mix of two updates", gen, prev, v)
				}
				seen[gen] = v
				mu.Unlock()
				served.Add(1)
			}
		})
	}
	for gen := 2; gen <= updates; gen++ {
		order := []string{"a", "b"}
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, name := range order {
			if err := writers[name].TryWriteBinary(nil, shardPayload(t, shards[name], gen)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // kubelet syncs each volume in its own time
		}
	}
	a.waitServes(t, "/config?org=org&repo=delta&branch=main", updates)
	stop.Store(true)
	readers.Wait()
	ls := a.linesWhen(t, lastSucceeded)
	t.Logf("%d updates of 2 shards: %d requests over %d snapshots; %d reloads, %d pending, %d failures", updates, served.Load(), len(seen), count(ls, "success"), count(ls, "pending"), count(ls, "failure"))
	if count(ls, "failure") != 0 {
		t.Errorf("failures:\n%s", a.stdout.String())
	}
	if count(ls, "pending") == 0 {
		t.Error("no attempt was pending: the split sets were never seen")
	}
	if l := ls[len(ls)-1]; l.Status != "success" || l.Files != 4 || !strings.HasPrefix(l.Generation, "sha256:") {
		t.Errorf("last line %+v", l)
	}
}

// TestProwUpdateconfig serves shards that prow's updateconfig writes:
// each merge stamps VERSION only into the shard it touched, so the shards'
// versions differ as a matter of course. With --version-stamps touched,
// every merge is served after --settle, never pending and never a
// failure, and a shard whose VERSION goes back to one it held before (the
// config bootstrapper racing updateconfig) is served and reported as a
// rollback. With the default, a producer that stamps every shard, the
// same merge would be pending for ever.
func TestProwUpdateconfig(t *testing.T) {
	root := t.TempDir()
	shards := map[string][]string{"a": {"alpha"}, "b": {"gamma"}}
	writers := map[string]*watchtest.KubeletWriter{}
	write := func(name string, gen int, version string) {
		t.Helper()
		payload := shardPayload(t, shards[name], gen)
		payload["VERSION"] = []byte(version + "\n")
		if err := writers[name].TryWriteBinary(nil, payload); err != nil {
			t.Fatal(err)
		}
	}
	for name := range shards {
		dir := filepath.Join(root, name)
		watchtest.WriteFiles(t, dir, nil)
		writers[name] = watchtest.NewKubeletWriter(t, dir)
		write(name, 1, "sha0")
	}
	a := startAgent(t, "--source", filepath.Join(root, "a"), "--source", filepath.Join(root, "b"),
		"--version-key", "VERSION", "--version-stamps", "touched", "--settle", "50ms", "--poll-interval", "100ms")
	a.waitFor(t, "/readyz", http.StatusOK)
	write("a", 2, "sha1") // a merge touching shard a only
	a.waitServes(t, "/config?org=org&repo=alpha&branch=main", 2)
	write("b", 3, "sha2") // the next, shard b only
	a.waitServes(t, "/config?org=org&repo=gamma&branch=main", 3)
	write("a", 1, "sha0") // the bootstrapper writes an older commit
	a.waitServes(t, "/config?org=org&repo=alpha&branch=main", 1)
	ls := a.linesWhen(t, func(ls []line) bool { return len(ls) >= 4 })
	if count(ls, "pending") != 0 || count(ls, "failure") != 0 || count(ls, "success") != 4 {
		t.Errorf("every merge is served, none pending or failed:\n%s", a.stdout.String())
	}
	want := filepath.Join(root, "a", "VERSION") + ` went back from "sha1" to "sha0"`
	if got := ls[3].Rollbacks; len(got) != 1 || got[0] != want || len(ls[1].Rollbacks)+len(ls[2].Rollbacks) != 0 {
		t.Errorf("rollbacks %q, want [%s] on the last line only", got, want)
	}
	if _, _, body := a.get(t, "/metrics"); !strings.Contains(body, "configagent_automatic_reload_rollbacks_total 1") {
		t.Errorf("metrics:\n%s", body)
	}
}

// TestGitSyncTree serves a git-sync checkout: configurations at any depth,
// variants apart, the endpoints' answers as the contract says, a new
// revision served whole.
func TestGitSyncTree(t *testing.T) {
	g := watchtest.NewGitSync(t.TempDir(), "release")
	tree := func(gen int) map[string]string {
		return map[string]string{
			"ci-operator/config/openshift/ci-tools/openshift-ci-tools-master.yaml":           ciConfig("openshift", "ci-tools", "master", "", gen),
			"ci-operator/config/openshift/ci-tools/openshift-ci-tools-master__periodic.yaml": ciConfig("openshift", "ci-tools", "master", "periodic", gen),
			"ci-operator/config/org/a-b/org-a-b-release-4.1.yaml":                            ciConfig("org", "a-b", "release-4.1", "", gen),
			"ci-operator/config/org/a/org-a-b-release-4.1.yaml":                              ciConfig("org", "a", "b-release-4.1", "", gen),
			"README.md": "not a configuration",
			".git":      "gitdir: ../.git/worktrees/x",
		}
	}
	if err := g.Write(tree(1)); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, "--source", g.Path(), "--poll-interval", "100ms", "--settle", "10ms")
	a.waitFor(t, "/readyz", http.StatusOK)
	code, gen1, body := a.get(t, "/config?org=org&repo=a&branch=b-release-4.1")
	if code != http.StatusOK || !strings.Contains(body, "repo: a\n") || !strings.HasPrefix(gen1, "sha256:") {
		t.Fatalf("a dash in a name: %d %q %s", code, gen1, body)
	}
	if code, _, body := a.get(t, "/config?org=openshift&repo=ci-tools&branch=master&variant=periodic"); code != http.StatusOK || !strings.Contains(body, "variant: periodic") {
		t.Errorf("a variant: %d %s", code, body)
	}
	if code, _, body := a.get(t, "/config?org=openshift&repo=ci-tools&branch=master"); code != http.StatusOK || strings.Contains(body, "variant") {
		t.Errorf("no variant: %d %s", code, body)
	}
	for path, want := range map[string]int{
		"/config?org=org&repo=nope&branch=main": http.StatusNotFound,
		"/config?org=org&repo=a":                http.StatusBadRequest,
		"/config":                               http.StatusBadRequest,
		"/healthz":                              http.StatusOK,
	} {
		if code, _, body := a.get(t, path); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
	if _, _, body := a.get(t, "/metrics"); !strings.Contains(body, `configagent_automatic_reloads_total{status="success"} 1`) || !strings.Contains(body, "configagent_last_config_info{hash=\""+gen1+"\"} 1") ||
		!strings.Contains(body, "configagent_automatic_reload_duration_seconds_count") ||
		!strings.Contains(body, `configagent_automatic_reload_read_duration_seconds_count{status="success"} 1`) {
		t.Errorf("metrics:\n%s", body)
	}
	if ls := a.lines(t); len(ls) == 0 || ls[0].ReadSeconds <= 0 || ls[0].LoadSeconds <= 0 {
		t.Errorf("the first line does not say how long reading and loading took: %+v", ls)
	}

	next := tree(2)
	next["ci-operator/config/org/new/org-new-main.yaml"] = ciConfig("org", "new", "main", "", 2)
	if err := g.Write(next); err != nil {
		t.Fatal(err)
	}
	a.waitServes(t, "/config?org=org&repo=new&branch=main", 2)
	code, gen2, body := a.get(t, "/config?org=org&repo=a&branch=b-release-4.1")
	if code != http.StatusOK || generationOf(body) != 2 || gen2 == gen1 {
		t.Errorf("after a new revision: %d %s, generation %s", code, body, gen2)
	}
	ls := a.linesWhen(t, func(ls []line) bool { return len(ls) >= 2 })
	for i := range ls {
		ls[i].ReadSeconds, ls[i].LoadSeconds = 0, 0 // timings, checked above
	}
	if len(ls) != 2 || !reflect.DeepEqual(ls[0], line{Status: "success", Generation: gen1, Files: 4}) || !reflect.DeepEqual(ls[1], line{Status: "success", Generation: gen2, Files: 5}) {
		t.Errorf("stdout:\n%s", a.stdout.String())
	}
}

// TestInvalidReloadKeepsTheLastGood publishes a revision with a file that
// is not YAML, then one with two files of one identity: each is a
// failure naming the files, and the last good snapshot stays served.
func TestInvalidReloadKeepsTheLastGood(t *testing.T) {
	g := watchtest.NewGitSync(t.TempDir(), "link")
	good := map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 1)}
	if err := g.Write(good); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, "--source", g.Path(), "--poll-interval", "100ms", "--settle", "10ms")
	a.waitFor(t, "/readyz", http.StatusOK)
	_, gen, _ := a.get(t, "/config?org=o&repo=r&branch=main")
	for i, bad := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 2), "o/r/o-r-dev.yaml": "tests: [unclosed\n"}, "o/r/o-r-dev.yaml: not YAML"},
		{map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 2), "o/r/copy.yaml": ciConfig("o", "r", "main", "", 3)}, "o/r/o-r-main.yaml: o/r@main is configured by " + filepath.Join(g.Path(), "o/r/copy.yaml") + " already"},
		{map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 2), "o/r/plain.yaml": "a: 1\n"}, "o/r/plain.yaml: no zz_generated_metadata"},
	} {
		if err := g.Write(bad.files); err != nil {
			t.Fatal(err)
		}
		watchtest.Until(20*time.Second, func() bool { return count(a.lines(t), "failure") >= i+1 })
		ls := a.lines(t)
		if l := ls[len(ls)-1]; l.Status != "failure" || !strings.Contains(l.Error, bad.want) || l.Files != 2 || l.Generation == gen {
			t.Fatalf("bad revision %d: %+v, want a failure naming %q", i, l, bad.want)
		}
		if code, now, body := a.get(t, "/config?org=o&repo=r&branch=main"); code != http.StatusOK || now != gen || generationOf(body) != 1 {
			t.Fatalf("after bad revision %d: %d, %s, generation %d; want the last good", i, code, now, generationOf(body))
		}
	}
	if err := g.Write(map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 4)}); err != nil {
		t.Fatal(err)
	}
	a.waitServes(t, "/config?org=o&repo=r&branch=main", 4)
}

// TestReloadNeverBlocksARequest holds a reload in the middle: requests
// are answered at once, from the snapshot current when they arrived.
func TestReloadNeverBlocksARequest(t *testing.T) {
	g := watchtest.NewGitSync(t.TempDir(), "link")
	if err := g.Write(map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 1)}); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, "--source", g.Path(), "--poll-interval", "100ms", "--settle", "10ms")
	a.waitFor(t, "/readyz", http.StatusOK)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	beforeLoad.Store(&hook)
	defer beforeLoad.Store(nil)
	if err := g.Write(map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 2)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no reload began")
	}
	for range 50 {
		start := time.Now()
		code, _, body := a.get(t, "/config?org=o&repo=r&branch=main")
		if code != http.StatusOK || generationOf(body) != 1 {
			t.Fatalf("during a reload: %d %s", code, body)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("a request took %s during a reload", d)
		}
	}
	close(release)
	a.waitServes(t, "/config?org=o&repo=r&branch=main", 2)
}

// TestPendingFirstSnapshot starts on two sources that disagree: /healthz
// answers, /readyz does not until they agree.
func TestPendingFirstSnapshot(t *testing.T) {
	root := t.TempDir()
	a1, b1 := watchtest.NewGitSync(filepath.Join(root, "a"), "link"), watchtest.NewGitSync(filepath.Join(root, "b"), "link")
	watchtest.WriteFiles(t, root, map[string]string{"a/.keep": "", "b/.keep": ""})
	write := func(g *watchtest.GitSync, repo string, gen int) {
		t.Helper()
		if err := g.Write(map[string]string{"VERSION": strconv.Itoa(gen), "o-" + repo + "-main.yaml": ciConfig("o", repo, "main", "", gen)}); err != nil {
			t.Fatal(err)
		}
	}
	write(a1, "x", 2)
	write(b1, "y", 1)
	a := startAgent(t, "--source", a1.Path(), "--source", b1.Path(), "--version-key", "VERSION", "--poll-interval", "50ms", "--settle", "0")
	a.waitFor(t, "/healthz", http.StatusOK)
	time.Sleep(200 * time.Millisecond) // four polls: readiness must not come, and no signal marks an absence
	if code, _, _ := a.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d on a pending first snapshot", code)
	}
	if code, _, _ := a.get(t, "/config?org=o&repo=x&branch=main"); code != http.StatusServiceUnavailable {
		t.Errorf("/config %d before a snapshot", code)
	}
	write(b1, "y", 2)
	a.waitFor(t, "/readyz", http.StatusOK)
	ls := a.linesWhen(t, lastSucceeded)
	if ls[0].Status != "pending" || !strings.Contains(ls[0].Error, "VERSION") || ls[len(ls)-1].Status != "success" || ls[len(ls)-1].Files != 2 {
		t.Errorf("stdout:\n%s", a.stdout.String())
	}
}

// TestCommandLine builds the binary and runs it as a user does: an
// invalid first snapshot exits 1 with the reason on stderr; a usage error
// exits 2.
func TestCommandLine(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "configagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"o-r-main.yaml": "zz_generated_metadata: {org: o, repo: r}\n"})
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--source", dir, "--listen", watchtest.FreeAddr(t)}, 1, "configagent: the first snapshot is invalid: " + filepath.Join(dir, "o-r-main.yaml") + ": zz_generated_metadata needs org, repo and branch"},
		{[]string{"--source", filepath.Join(dir, "missing"), "--listen", watchtest.FreeAddr(t)}, 1, "no such file or directory"},
		{[]string{"--listen", watchtest.FreeAddr(t)}, 2, "--source is required"},
		{[]string{"--source", dir}, 2, "--listen is required"},
		{[]string{"--source", dir, "--listen", watchtest.FreeAddr(t), "--poll-interval", "1ns"}, 2, "--poll-interval 1ns: must be at least"},
		{[]string{"--source", dir, "--listen", watchtest.FreeAddr(t), "--max-bytes", "0"}, 2, "--max-bytes 0: must be positive"},
		{[]string{"--source", dir, "--listen", watchtest.FreeAddr(t), "--version-stamps", "some"}, 2, `--version-stamps "some": "all" or "touched"`},
		{[]string{"--source", dir, "--listen", watchtest.FreeAddr(t), "--manifest", dir + "m", "--version-key", "VERSION"}, 2, "--manifest and --version-key are two ways to tell a whole set: give one"},
		{[]string{"--source", dir, "--listen", watchtest.FreeAddr(t), "--manifest", dir}, 2, "--manifest " + dir + " is a --source too: the sources are its parts"},
		{[]string{"--source", dir, "--manifest", filepath.Join(dir, "missing"), "--listen", watchtest.FreeAddr(t)}, 1, "no such file or directory"},
		{[]string{"publish", "--dir", dir}, 2, "--dir, --kubeconfig, --namespace, --manifest and --part are required"},
		{[]string{"publish", "--dir", dir, "--kubeconfig", filepath.Join(dir, "none"), "--namespace", "ci", "--manifest", "m", "--part", "p"}, 1, "publish: --kubeconfig " + filepath.Join(dir, "none")},
		// Mistakes of the command line, found before anything is read.
		{[]string{"publish", "--dir", dir, "--kubeconfig", filepath.Join(dir, "none"), "--namespace", "ci", "--manifest", "m", "--part", "m"}, 2, `ConfigMap "m" is named twice`},
		{[]string{"publish", "--dir", dir, "--kubeconfig", filepath.Join(dir, "none"), "--namespace", "ci", "--manifest", "m", "--part", "p", "--part", "p"}, 2, `ConfigMap "p" is named twice`},
		{[]string{"publish", "--dir", dir, "--kubeconfig", filepath.Join(dir, "none"), "--namespace", "ci", "--manifest", "m", "--part", "Not_A_Name"}, 2, `"Not_A_Name" is not a ConfigMap name`},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
		}
		if tc.code == 1 && tc.stderr[0] == 'c' && !strings.HasPrefix(stdout.String(), `{"status":"failure"`) {
			t.Errorf("%v: stdout %q, want the failed attempt's line", tc.args, stdout.String())
		}
	}
	_ = os.Remove(bin)
}

// TestHostileSources serves a checkout whose committers are hostile: a
// revision that links a configuration to a file outside the checkout is
// refused naming the link, and what it points to is never served; gzip'd
// shards that together pass --max-bytes are refused, however small each
// is on disk; and a client holding idle and half-sent connections keeps
// neither the sources nor /healthz from anyone.
func TestHostileSources(t *testing.T) {
	top := t.TempDir()
	watchtest.WriteFiles(t, top, map[string]string{"outside.yaml": ciConfig("evil", "outside", "main", "", 9)})
	g := watchtest.NewGitSync(filepath.Join(top, "g"), "link")
	good := map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 1)}
	if err := g.Write(good); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, "--source", g.Path(), "--poll-interval", "50ms", "--settle", "0")
	a.waitFor(t, "/readyz", http.StatusOK)
	httpservetest.Siege(t, strings.TrimPrefix(a.base, "http://"), nil, "/healthz", http.StatusOK)

	if err := g.WriteLinks(map[string]string{"o/r/o-r-main.yaml": ciConfig("o", "r", "main", "", 2)}, map[string]string{"o/r/x.yaml": "../../../../../outside.yaml"}); err != nil {
		t.Fatal(err)
	}
	ls := a.linesWhen(t, func(ls []line) bool { return len(ls) >= 2 })
	if ls[1].Status != "failure" || !strings.Contains(ls[1].Error, filepath.Join(g.Path(), "o", "r", "x.yaml")+" is a symbolic link that leads outside its source") {
		t.Errorf("a revision with a link out: %+v", ls[1])
	}
	if code, _, body := a.get(t, "/config?org=evil&repo=outside&branch=main"); code != http.StatusNotFound {
		t.Errorf("the file outside was served: %d %s", code, body)
	}
	if code, _, body := a.get(t, "/config?org=o&repo=r&branch=main"); code != http.StatusOK || generationOf(body) != 1 {
		t.Errorf("the last good snapshot: %d %s", code, body)
	}

	// Shards of 3 MiB each once decompressed, a few KiB on disk.
	dir := t.TempDir()
	var args []string
	for i := range 4 {
		shard := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		body := ciConfig("o", fmt.Sprintf("r%d", i), "main", "", 1) + "# " + strings.Repeat("x", 3<<20) + "\n"
		watchtest.WriteFiles(t, shard, map[string]string{fmt.Sprintf("o-r%d-main.yaml", i): string(compressed(t, body))})
		args = append(args, "--source", shard)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr watchtest.Buffer
	code := run(ctx, append(args, "--listen", watchtest.FreeAddr(t), "--max-bytes", strconv.Itoa(10<<20)), nil, io.Discard, &stderr)
	if want := "puts the snapshot over the limit of 10485760 bytes in all, once decompressed"; code != 1 || !strings.Contains(stderr.String(), want) {
		t.Errorf("four shards of 3 MiB within --max-bytes 10 MiB: exit %d, stderr %s; want 1 and %q", code, stderr.String(), want)
	}
}

// TestAliasBombRefused: a configuration of 67 KB, under every size limit,
// whose YAML aliases one 64 KiB scalar 300 times (18 MiB written out in
// full, to read its metadata) is refused before it expands.
func TestAliasBombRefused(t *testing.T) {
	body := ciConfig("o", "r", "main", "", 1) + "anchor: &a " + strings.Repeat("x", 64<<10) + "\nlist:\n" + strings.Repeat("- *a\n", 300)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := parseConfig([]byte(body))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "YAML aliasing") {
		t.Errorf("%d bytes expanding to 18 MiB: %v, want the aliases refused", len(body), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("refusing it allocated %d MiB", alloc>>20)
	}
}

// TestVersionStampsNeedsVersionKey: --version-stamps says how the sources
// are stamped with --version-key ([--version-key KEY [--version-stamps
// all|touched] | --manifest DIR]); given without it, beside --manifest
// too, it is a usage error.
func TestVersionStampsNeedsVersionKey(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--source", dir, "--listen", "127.0.0.1:0", "--version-stamps", "touched"},
		{"--source", dir, "--listen", "127.0.0.1:0", "--version-stamps", "touched", "--manifest", dir + "m"},
	} {
		if f, err := parse(args, io.Discard); err == nil {
			t.Errorf("%v: accepted (version key %q, stamps %q, manifest %q); want a usage error: --version-stamps needs --version-key", args, f.versionKey, f.versionStamps, f.manifest)
		}
	}
}

// TestSourceGivenTwice: one source given twice is a usage error (exit 2)
// naming it, not a snapshot whose every configuration collides with
// itself.
func TestSourceGivenTwice(t *testing.T) {
	dir := t.TempDir()
	watchtest.WriteFiles(t, dir, map[string]string{"o-r-main.yaml": ciConfig("o", "r", "main", "", 1)})
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, []string{"--source", dir, "--source", dir, "--listen", watchtest.FreeAddr(t)}, nil, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--source "+dir) {
		t.Errorf("--source %s twice: exit %d, stderr %q; want 2 and a usage error naming the source", dir, code, stderr.String())
	}
}

// TestSourceDotWithoutManifest: `--source .` (the working directory, as a
// git-sync root or a checkout is often served) with no --manifest is a
// valid command line.
func TestSourceDotWithoutManifest(t *testing.T) {
	for _, src := range []string{".", "./"} {
		if _, err := parse([]string{"--source", src, "--listen", "127.0.0.1:0"}, io.Discard); err != nil {
			t.Errorf("--source %s: %v; want it accepted", src, err)
		}
	}
}

// TestSourceGivenTwiceAbsoluteAndRelative: one directory given as a
// relative and as an absolute path is one source given twice, a usage
// error, as the same spelling twice is.
func TestSourceGivenTwiceAbsoluteAndRelative(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "configs"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if f, err := parse([]string{"--source", "configs", "--source", filepath.Join(dir, "configs"), "--listen", "127.0.0.1:0"}, io.Discard); err == nil {
		t.Errorf("accepted sources %q; want a usage error: one directory given twice", f.sources)
	}
}
