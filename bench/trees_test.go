package bench

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratacfg/strata/internal/watchtest"
)

// treeServers are the ways case 8 compares.
var treeServers = []struct {
	name  string
	start func(TreeOptions) (TreeServer, error)
}{
	{"strata", StrataTrees},
	{"ci-tools-style", CIToolsTrees},
	{"prow-style", ProwTrees},
}

// ciTree is a git-sync revision of files configurations of about size
// bytes each, at generation gen, under ci-operator/config/ORG/REPO/.
func ciTree(files, size, gen int) map[string]string {
	out := make(map[string]string, files)
	for i := range files {
		org, repo := fmt.Sprintf("org%d", i%50), fmt.Sprintf("repo%d", i)
		out[fmt.Sprintf("ci-operator/config/%s/%s/%s-%s-main.yaml", org, repo, org, repo)] = CIConfig(org, repo, "main", gen, size)
	}
	return out
}

// waitGeneration waits until s serves gen for id.
func waitGeneration(tb testing.TB, s TreeServer, id CIIdentity, gen int) {
	tb.Helper()
	if watchtest.Until(60*time.Second, func() bool {
		data, ok := s.Get(id)
		return ok && GenerationOf(data) == gen
	}) {
		return
	}
	tb.Fatalf("generation %d of %v not served within 60s", gen, id)
}

// TestTreeServersAgree loads one git-sync tree with each way case 8
// compares, and follows one new revision: they serve the same.
func TestTreeServersAgree(t *testing.T) {
	for _, srv := range treeServers {
		t.Run(srv.name, func(t *testing.T) {
			g := watchtest.NewGitSync(t.TempDir(), "release")
			if err := g.Write(ciTree(40, 500, 1)); err != nil {
				t.Fatal(err)
			}
			s, err := srv.start(TreeOptions{Roots: []string{filepath.Join(g.Path(), "ci-operator", "config")}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			id := CIIdentity{Org: "org7", Repo: "repo7", Branch: "main"}
			if data, ok := s.Get(id); !ok || GenerationOf(data) != 1 {
				t.Fatalf("%v: %q, %t", id, data, ok)
			}
			if err := g.Write(ciTree(40, 500, 2)); err != nil {
				t.Fatal(err)
			}
			waitGeneration(t, s, id, 2)
			if _, ok := s.Get(CIIdentity{Org: "org7", Repo: "repo8", Branch: "main"}); ok {
				t.Error("a configuration that does not exist was served")
			}
		})
	}
}

// BenchmarkCase8Trees compares the three ways of serving CI configuration
// trees, run with -benchtime 1x (one iteration is a whole scenario):
//
//   - reload/NAME: two clients read, each one request every 100 µs, while
//     a git-sync checkout of TreeFiles configurations, TreeBytes in all,
//     reloads TreeReloads times; the latency of the reads over the
//     reloads, a read held up counted with the requests that would have
//     queued behind it, and how long a reload took;
//   - shards/NAME: one change touching Shards ConfigMaps, each mounted on
//     its own and updated by kubelet's AtomicWriter one after another (20
//     ms apart), every ConfigMap with a VERSION marker: how
//     many snapshots each published, and how many of those mixed two
//     versions;
//   - publish/NAME: a checkout published PublishRounds times to the real
//     kube-apiserver as PublishParts ConfigMaps, each merge changing every
//     configuration, read by PublishReplicas replicas whose kubelets
//     update each volume on its own after a random delay (publish_test.go):
//     the median time from a publish's return to every replica serving
//     it, and the snapshots that mixed two publishes. strata publishes
//     with watch/configset and reads with its check; the others publish
//     with prow's own updateconfig, strata-prow reading it with
//     MarkersMove and configagent's settle time.
func BenchmarkCase8Trees(b *testing.B) {
	for _, srv := range treeServers {
		b.Run("reload/"+srv.name, func(b *testing.B) {
			for b.Loop() {
				benchReload(b, srv.start)
			}
		})
	}
	for _, sc := range []struct {
		name  string
		start func(TreeOptions) (TreeServer, error)
		key   string
	}{
		{"strata", StrataTrees, "VERSION"},
		{"ci-tools-style", CIToolsTrees, ""},
		{"prow-style", ProwTrees, ""},
	} {
		b.Run("shards/"+sc.name, func(b *testing.B) {
			for b.Loop() {
				benchShards(b, sc.start, sc.key)
			}
		})
	}
	for _, sc := range []struct {
		name     string
		publish  producer
		start    func(TreeOptions) (TreeServer, error)
		o        TreeOptions
		manifest bool
	}{
		{"strata", configsetProducer, StrataTrees, TreeOptions{}, true},
		{"strata-prow", prowProducer, StrataTrees, TreeOptions{VersionKey: "VERSION", Touched: true, Settle: PublishSettle}, false},
		{"ci-tools-style", prowProducer, CIToolsTrees, TreeOptions{}, false},
		{"prow-style", prowProducer, ProwTrees, TreeOptions{}, false},
	} {
		b.Run("publish/"+sc.name, func(b *testing.B) {
			for b.Loop() {
				benchPublish(b, sc.publish, sc.start, sc.o, sc.manifest)
			}
		})
	}
}

// The size of case 8's tree.
const (
	TreeFiles   = 5000
	TreeBytes   = 50 << 20
	TreeReloads = 3
	Shards      = 8
)

func benchReload(b *testing.B, start func(TreeOptions) (TreeServer, error)) {
	g := watchtest.NewGitSync(b.TempDir(), "release")
	if err := g.Write(ciTree(TreeFiles, TreeBytes/TreeFiles, 0)); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var published []time.Time
	s, err := start(TreeOptions{
		Roots: []string{filepath.Join(g.Path(), "ci-operator", "config")},
		Published: func(CIConfigs) {
			mu.Lock()
			published = append(published, time.Now())
			mu.Unlock()
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	ids := make([]CIIdentity, 100)
	for i := range ids {
		n := rand.IntN(TreeFiles)
		ids[i] = CIIdentity{Org: fmt.Sprintf("org%d", n%50), Repo: fmt.Sprintf("repo%d", n), Branch: "main"}
	}
	var (
		stop      atomic.Bool
		recording atomic.Bool
		lat       [2][]time.Duration
		readers   sync.WaitGroup
	)
	const every = 100 * time.Microsecond
	for r := range lat {
		readers.Go(func() {
			due := time.Now()
			for i := 0; !stop.Load(); i++ {
				if d := time.Until(due); d > 0 {
					time.Sleep(d) // a reader paced at a fixed rate
				}
				began := time.Now()
				if _, ok := s.Get(ids[i%len(ids)]); !ok {
					b.Errorf("%v not served", ids[i%len(ids)])
					return
				}
				took := time.Since(began)
				if recording.Load() {
					// The requests due while this one was held up
					// waited behind it (the correction HdrHistogram
					// makes for coordinated omission), so a read held
					// for a second counts as the ten thousand that
					// queued, not as one.
					for d := took; d > 0; d -= every {
						lat[r] = append(lat[r], d)
					}
				}
				due = time.Now().Add(every)
			}
		})
	}
	var took []time.Duration
	for gen := 1; gen <= TreeReloads; gen++ {
		tree := ciTree(TreeFiles, TreeBytes/TreeFiles, gen)
		mu.Lock()
		n := len(published)
		mu.Unlock()
		recording.Store(true)
		began := time.Now()
		if err := g.Write(tree); err != nil {
			b.Fatal(err)
		}
		waitGeneration(b, s, ids[0], gen)
		time.Sleep(100 * time.Millisecond) // reads held up until the publish record their wait; nothing marks the last of them
		recording.Store(false)
		mu.Lock()
		if len(published) > n {
			took = append(took, published[len(published)-1].Sub(began))
		}
		mu.Unlock()
	}
	stop.Store(true)
	readers.Wait()
	all := append(lat[0], lat[1]...)
	slices.Sort(all)
	if len(all) == 0 {
		b.Fatal("no read recorded")
	}
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(all[(len(all)-1)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(all[len(all)-1].Nanoseconds())/1e3, "max-µs")
	b.ReportMetric(float64(len(all)), "reads")
	if len(took) > 0 {
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "reload-ms")
	}
}

// shardPayload is ConfigMap i of the shards at version gen.
func shardPayload(i, gen int) map[string]string {
	out := map[string]string{"VERSION": strconv.Itoa(gen)}
	for j := range 10 {
		org, repo := fmt.Sprintf("org%d", i), fmt.Sprintf("repo%d", j)
		out[fmt.Sprintf("%s-%s-main.yaml", org, repo)] = CIConfig(org, repo, "main", gen, 2000)
	}
	return out
}

func benchShards(b *testing.B, start func(TreeOptions) (TreeServer, error), key string) {
	root := b.TempDir()
	var roots []string
	var writers []*watchtest.KubeletWriter
	for i := range Shards {
		dir := filepath.Join(root, strconv.Itoa(i))
		watchtest.WriteFiles(b, dir, nil)
		w := watchtest.NewKubeletWriter(b, dir)
		w.Write(b, shardPayload(i, 1))
		roots, writers = append(roots, dir), append(writers, w)
	}
	var mu sync.Mutex
	var snapshots, mixed int
	s, err := start(TreeOptions{Roots: roots, VersionKey: key, Published: func(cs CIConfigs) {
		mu.Lock()
		defer mu.Unlock()
		snapshots++
		if _, err := Generations(cs); err != nil {
			mixed++
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	mu.Lock()
	snapshots, mixed = 0, 0 // the initial load is no reload
	mu.Unlock()
	for i, w := range writers {
		w.Write(b, shardPayload(i, 2))
		time.Sleep(20 * time.Millisecond) // kubelet syncs one volume after another
	}
	waitGeneration(b, s, CIIdentity{Org: fmt.Sprintf("org%d", Shards-1), Repo: "repo9", Branch: "main"}, 2)
	time.Sleep(500 * time.Millisecond) // a quiet period: nothing signals that no reload is still under way
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(float64(snapshots), "reloads")
	b.ReportMetric(float64(mixed), "mixed-snapshots")
}
