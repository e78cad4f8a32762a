package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/layers/namespaced"
)

// scaleEnv lists the namespace counts BenchmarkCase7Namespaces runs at,
// ascending and comma-separated; unset, the benchmark is skipped, since
// creating the namespaces takes longer than `make bench` should (`make
// bench-scale` sets it).
const scaleEnv = "STRATA_SCALE_NAMESPACES"

// BenchmarkCase7Namespaces is case 7's Lazy rows at more namespaces, each
// with its overlay, against the real kube-apiserver: for each count of
// scaleEnv, the namespaces are created up to it (those of the counts
// before it kept), and a new Lazy resolver caching them all resolves
// every one. Per count:
//
//   - namespaces=N/lazy: the heap, goroutines and API server watches the
//     resolver adds, per namespace, and the time it took to resolve them
//     all;
//   - namespaces=N/cluster-change: the cluster ConfigMap changes under
//     them: how long until every snapshot is current;
//   - namespaces=N/miss: a resolve of a namespace never seen into the full
//     cache, each evicting one, against the real server: 1,000 of them,
//     after 50 untimed and a collection.
func BenchmarkCase7Namespaces(b *testing.B) {
	counts, err := scaleCounts(os.Getenv(scaleEnv))
	if err != nil {
		b.Fatal(err)
	}
	if len(counts) == 0 {
		b.Skip(scaleEnv + " is not set: make bench-scale runs this case")
	}
	if server == nil {
		b.Fatal("no kube-apiserver: TestMain starts one when benchmarks run")
	}
	ctx := context.Background()
	c := server.Client(b)
	if err := createSystem(ctx, c); err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, n := range counts {
		start := time.Now()
		more := make([]string, 0, n-len(names))
		for i := len(names); i < n; i++ {
			more = append(more, fmt.Sprintf("scale-%06d", i))
		}
		if err := createTenants(ctx, c, more); err != nil {
			b.Fatal(err)
		}
		names = append(names, more...)
		b.Logf("%d namespaces with overlays, %d created in %v", n, len(more), time.Since(start).Round(time.Second))

		o, err := ResolverOptions()
		if err != nil {
			b.Fatal(err)
		}
		o.CacheSize = n
		var lazy *namespaced.Resolver[*Settings]
		prefix := "namespaces=" + strconv.Itoa(n) + "/"
		b.Run(prefix+"lazy", func(b *testing.B) {
			heap0, g0, w0 := heapBytes(), runtime.NumGoroutine(), apiWatches(b, c)
			start := time.Now()
			runs := 0
			for b.Loop() {
				if lazy != nil {
					lazy.Stop() // one resolver is measured: the last
				}
				if lazy, err = namespaced.NewLazy(c, o); err != nil {
					b.Fatal(err)
				}
				if err := lazy.Start(ctx); err != nil {
					b.Fatal(err)
				}
				for _, ns := range names {
					if _, err := lazy.ForNamespace(ctx, ns); err != nil {
						b.Fatal(err)
					}
				}
				runs++
			}
			took := time.Since(start) / time.Duration(runs)
			time.Sleep(time.Second) // watches the last resolves opened, if any: nothing announces an open watch
			per := float64(len(names))
			b.ReportMetric(float64(heapBytes()-heap0)/per, "heap-B-per-ns")
			b.ReportMetric(float64(runtime.NumGoroutine()-g0)/per, "goroutines-per-ns")
			b.ReportMetric(apiWatches(b, c)-w0, "api-watches")
			b.ReportMetric(took.Seconds(), "resolve-all-s")
			b.ReportMetric(float64(heapBytes())/(1<<20), "heap-MiB")
		})
		if lazy == nil {
			b.Fatal("the lazy row did not run: run the whole benchmark")
		}
		b.Run(prefix+"cluster-change", func(b *testing.B) {
			for b.Loop() {
				current, _ := clusterChange(b, c, lazy, names)
				b.ReportMetric(float64(current.Milliseconds()), "all-current-ms")
			}
		})
		runs := 0 // each run's namespaces are new to the resolver, with -count too
		b.Run(prefix+"miss", func(b *testing.B) {
			const misses, untimed = 1000, 50
			done := 0
			runs++
			miss := func() {
				if _, err := lazy.ForNamespace(ctx, fmt.Sprintf("never-%d-%d-%d", n, runs, done)); err != nil {
					b.Fatal(err)
				}
				done++
			}
			for range untimed {
				miss()
			}
			// The garbage of the cluster change's rebuilds, which grows
			// with the namespaces, is collected before, not charged to
			// the misses.
			runtime.GC()
			start, timed := time.Now(), done
			for b.Loop() {
				for range misses {
					miss()
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(done-timed), "miss-µs")
		})
		lazy.Stop()
		lazy = nil
	}
}

// scaleCounts reads scaleEnv's value: ascending namespace counts.
func scaleCounts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%s=%q: want ascending positive counts, as 10000,30000,100000", scaleEnv, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// BenchmarkClusterChangeRebuild is case 10's cluster change in memory: a
// resolver over objects (no API server, no reader besides) caching
// rebuildNamespaces namespaces, each with its overlay, and the time from
// a change of the cluster ConfigMap until every snapshot is rebuilt, per
// namespace: the resolver's own part of cluster-change, for a profile.
// same: every overlay is the workload's, as in case 10, so one object is
// built and shared; distinct: each namespace's overlay has a parallelism
// of its own, so each is built.
func BenchmarkClusterChangeRebuild(b *testing.B) {
	const rebuildNamespaces = 20000
	for _, distinct := range []bool{false, true} {
		b.Run(map[bool]string{false: "same", true: "distinct"}[distinct], func(b *testing.B) {
			rd := &objectsReader{cluster: ClusterConfigMap(), own: map[string]*corev1.ConfigMap{}}
			for i := range rebuildNamespaces {
				ns := namespaceName(i)
				rd.own[ns] = NamespaceConfigMap(ns)
				if distinct {
					rd.own[ns].Data["parallelism"] = strconv.Itoa(100 + i)
				}
			}
			r := cachedResolver(b, rd, rebuildNamespaces)
			ctx := context.Background()
			version := 0
			for b.Loop() {
				version++
				cm := ClusterConfigMap()
				cm.ResourceVersion = "changed-" + strconv.Itoa(version)
				cm.Data["managed-by"] = "strata-bench-" + strconv.Itoa(version)
				rd.setCluster(cm)
				r.Invalidate(cm)
				if err := r.WaitForSubscribers(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rebuildNamespaces, "ns/namespace")
		})
	}
}

// objectsReader is a Reader over the workload's ConfigMaps, each namespace's
// the same object from one read to the next, as a cache's are.
type objectsReader struct {
	mu      sync.Mutex
	cluster *corev1.ConfigMap
	own     map[string]*corev1.ConfigMap // by namespace, never changed
}

func (m *objectsReader) setCluster(cm *corev1.ConfigMap) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cluster = cm
}

func (m *objectsReader) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if namespace == SystemNamespace && name == ClusterName {
		return m.cluster, nil
	}
	return m.own[namespace], nil
}

func (m *objectsReader) ConfigMaps(_ context.Context, namespace string, _ labels.Selector) ([]*corev1.ConfigMap, error) {
	if cm := m.own[namespace]; cm != nil {
		return []*corev1.ConfigMap{cm}, nil
	}
	return nil, nil
}

func (*objectsReader) NamespaceLabels(context.Context, string) (map[string]string, error) {
	return nil, nil
}
