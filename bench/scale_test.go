package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/stratacfg/strata/layers/namespaced"
)

// UnlabelledSize is the size of each unlabelled ConfigMap case 7 creates:
// 10,000 of 1 MiB would be 10 GiB, five times etcd's default quota of
// 2 GiB, so the case creates 10,000 of 100 KiB (1 GiB): the count is the
// issue's, the size scaled to fit.
const UnlabelledSize = 100 << 10

// BenchmarkCase7Scale is tenant abuse at scale, against the real
// kube-apiserver with CachedNamespaces namespaces, each with an overlay
// (run once: -benchtime 1x):
//
//   - lazy-10k/strata: a Lazy resolver resolves every namespace; heap,
//     goroutines and API server watches it adds, per namespace;
//   - cluster-change/strata: the cluster ConfigMap changes under them: how
//     long until every snapshot is current, and the slowest cached read
//     meanwhile;
//   - unlabelled/strata: tenants create one unlabelled ConfigMap of
//     UnlabelledSize in each namespace while a Lazy, an Informer and a
//     Direct resolver run: how much they all grow;
//     unlabelled/unfiltered-informer: what a ConfigMap informer with no
//     label selector (the cluster-wide cache behind the reports of
//     operators running out of memory) holds of them;
//   - evict/cache=N: a miss into a full cache of N namespaces, each
//     evicting one.
func BenchmarkCase7Scale(b *testing.B) {
	for _, size := range []int{1000, 10000} {
		b.Run("evict/cache="+strconv.Itoa(size), func(b *testing.B) { evictingMisses(b, size) })
	}
	ctx := context.Background()
	o, err := ResolverOptions()
	if err != nil {
		b.Fatal(err)
	}
	o.CacheSize = CachedNamespaces
	// The cluster and the Lazy resolver, made by the first sub-benchmark
	// that needs them.
	var cl *cluster
	var c kubernetes.Interface
	var lazy *namespaced.Resolver[*Settings]
	setUp := func(b *testing.B) {
		if cl == nil {
			cl = resolvedCluster(b) // the namespaces, and an Informer resolver over them
			c = server.Client(b)
		}
	}
	resolveAll := func(b *testing.B) {
		if lazy, err = namespaced.NewLazy(c, o); err != nil {
			b.Fatal(err)
		}
		if err := lazy.Start(ctx); err != nil {
			b.Fatal(err)
		}
		for _, ns := range cl.names {
			if _, err := lazy.ForNamespace(ctx, ns); err != nil {
				b.Fatal(err)
			}
		}
	}
	needLazy := func(b *testing.B) {
		setUp(b)
		if lazy == nil {
			resolveAll(b)
		}
	}
	defer func() {
		if lazy != nil {
			lazy.Stop()
		}
	}()

	b.Run("lazy-10k/strata", func(b *testing.B) {
		setUp(b)
		heap0, g0, w0 := heapBytes(), runtime.NumGoroutine(), apiWatches(b, c)
		for b.Loop() {
			resolveAll(b)
		}
		time.Sleep(time.Second) // watches the last resolves opened, if any: nothing announces an open watch
		n := float64(len(cl.names))
		b.ReportMetric(float64(heapBytes()-heap0)/n, "heap-B-per-ns")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines-per-ns")
		b.ReportMetric(apiWatches(b, c)-w0, "api-watches")
	})
	b.Run("cluster-change/strata", func(b *testing.B) {
		needLazy(b)
		for b.Loop() {
			current, slowest := clusterChange(b, c, lazy, cl.names)
			b.ReportMetric(float64(current.Milliseconds()), "all-current-ms")
			b.ReportMetric(float64(slowest.Microseconds()), "max-read-µs")
		}
	})

	b.Run("unlabelled/strata", func(b *testing.B) {
		needLazy(b)
		direct, err := namespaced.NewDirect(c, o)
		if err != nil {
			b.Fatal(err)
		}
		if err := direct.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer direct.Stop()
		heap0 := heapBytes()
		for b.Loop() {
			createUnlabelled(b, c, cl.names)
		}
		// Every resolver, in every mode, still serves.
		for _, r := range []interface {
			ForNamespace(context.Context, string) (*namespaced.Snapshot[*Settings], error)
		}{lazy, cl.r, direct} {
			for _, ns := range cl.names[:100] {
				if _, err := r.ForNamespace(ctx, ns); err != nil {
					b.Fatal(err)
				}
			}
		}
		time.Sleep(2 * time.Second) // a quiet period: nothing signals that the watches have no more to deliver
		b.ReportMetric(float64(heapBytes()-heap0)/(1<<20), "heap-MiB")
	})
	b.Run("unlabelled/unfiltered-informer", func(b *testing.B) {
		setUp(b)
		heap0 := heapBytes()
		var stop chan struct{}
		for b.Loop() {
			stop = make(chan struct{})
			f := informers.NewSharedInformerFactory(c, 0)
			inf := f.Core().V1().ConfigMaps()
			inf.Informer()
			f.Start(stop)
			f.WaitForCacheSync(stop)
			if n := len(inf.Informer().GetStore().ListKeys()); n < len(cl.names) {
				b.Fatalf("the informer holds %d ConfigMaps", n)
			}
		}
		b.ReportMetric(float64(heapBytes()-heap0)/(1<<20), "heap-MiB")
		close(stop)
	})
}

// heapBytes is the live heap after a collection.
func heapBytes() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// apiWatches is kube-apiserver's count of open ConfigMap watches, of any
// scope.
func apiWatches(b *testing.B, c kubernetes.Interface) float64 {
	b.Helper()
	body, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `resource="configmaps"`) && strings.Contains(line, `verb="WATCH"`) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			total += v
		}
	}
	return total
}

// clusterChange changes the cluster ConfigMap and returns how long it took
// until every namespace's snapshot holds the change, and the slowest read
// of a cached namespace meanwhile. It changes it back after.
func clusterChange(b *testing.B, c kubernetes.Interface, r *namespaced.Resolver[*Settings], names []string) (current, slowest time.Duration) {
	ctx := context.Background()
	set := func(managedBy string) {
		cm, err := c.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ClusterName, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		cm.Data["managed-by"] = managedBy
		if _, err := c.CoreV1().ConfigMaps(SystemNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var worst atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // reads, as reconciles make them, while the change lands
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if _, err := r.ForNamespace(ctx, names[rand.IntN(len(names))]); err != nil {
				b.Error(err)
				return
			}
			if d := int64(time.Since(start)); d > worst.Load() {
				worst.Store(d)
			}
		}
	})
	start := time.Now()
	set("strata-bench-changed")
	for i := 0; i < len(names); {
		s, err := r.ForNamespace(ctx, names[i])
		if err != nil {
			b.Fatal(err)
		}
		if s.Object.Plain().Strings[4] == "strata-bench-changed" {
			i++
			continue
		}
		if time.Since(start) > time.Minute {
			b.Fatalf("namespace %s still without the change after a minute", names[i])
		}
		time.Sleep(time.Millisecond) // the latency measured: a reader learns of a change only by reading
	}
	current = time.Since(start)
	close(stop)
	wg.Wait()
	set("strata-bench")
	return current, time.Duration(worst.Load())
}

// createUnlabelled creates, as tenants would, one unlabelled ConfigMap of
// UnlabelledSize in each namespace.
func createUnlabelled(b *testing.B, c kubernetes.Interface, names []string) {
	payload := strings.Repeat("x", UnlabelledSize-64)
	start := time.Now()
	err := parallel(names, func(ns string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-blob"}, Data: map[string]string{"blob": payload}}
		_, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d unlabelled ConfigMaps of %d KiB in %v", len(names), UnlabelledSize>>10, time.Since(start).Round(time.Second))
}

// evictingMisses measures a miss into a full cache of size namespaces,
// each resolve of a namespace never seen evicting one, on a resolver over
// objects in memory.
func evictingMisses(b *testing.B, size int) {
	r := cachedResolver(b, memReader{cluster: ClusterConfigMap(), overlay: NamespaceData()}, size)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := r.ForNamespace(ctx, "fresh-"+strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// cachedResolver returns a started resolver over rd whose cache of size
// namespaces holds the first size, each resolved once; it stops with b.
func cachedResolver(b *testing.B, rd namespaced.Reader, size int) *namespaced.Resolver[*Settings] {
	b.Helper()
	o, err := ResolverOptions()
	if err != nil {
		b.Fatal(err)
	}
	o.CacheSize = size
	r, err := namespaced.NewFromReader(rd, o)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Stop)
	for i := range size {
		if _, err := r.ForNamespace(ctx, namespaceName(i)); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// memReader is a Reader over the workload's ConfigMaps: the cluster one,
// and every namespace's overlay.
type memReader struct {
	cluster *corev1.ConfigMap
	overlay map[string]string
}

func (m memReader) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	switch {
	case namespace == SystemNamespace && name == ClusterName:
		return m.cluster, nil
	case name == OverridesName && namespace != SystemNamespace:
		return ConfigMap(namespace, name, "1", OverrideLabels, m.overlay), nil
	}
	return nil, nil
}

func (m memReader) ConfigMaps(_ context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	if namespace == SystemNamespace {
		return nil, nil
	}
	return []*corev1.ConfigMap{ConfigMap(namespace, OverridesName, "1", OverrideLabels, m.overlay)}, nil
}

func (memReader) NamespaceLabels(context.Context, string) (map[string]string, error) { return nil, nil }
