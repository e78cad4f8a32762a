package namespaced

import (
	"context"
	"fmt"
	"maps"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/scheme"
)

// tenantConfig is a flat ConfigMap configuration with a key of every kind
// the tenant policy treats apart.
type tenantConfig struct {
	metav1.TypeMeta `json:",inline"`
	Timeout         *int64 `json:"timeout,omitempty" strata:"overridable"`
	Retries         *int32 `json:"retries,omitempty" strata:"overridable"`
	Verbose         *bool  `json:"verbose,omitempty" strata:"overridable"`
	LogDir          string `json:"log-dir,omitempty" strata:"path,overridable"`
	AlphaThing      *bool  `json:"alpha-thing,omitempty" strata:"overridable,alpha"`
	BetaThing       *bool  `json:"beta-thing,omitempty" strata:"overridable,beta"`
	Quota           *int64 `json:"quota,omitempty" strata:"cluster-only"`
	Internal        *int64 `json:"internal,omitempty"`
	Tenancy         string `json:"tenancy,omitempty" strata:"not-path"`
	Locked          string `json:"locked,omitempty" strata:"not-path"`
	Stability       string `json:"stability,omitempty" strata:"not-path"`
	// A map and a list: members set whole, decoded as a document decodes
	// them.
	Labels map[string]string `json:"labels,omitempty" strata:"overridable,not-path"`
	Hosts  []string          `json:"hosts,omitempty" strata:"overridable,not-path"`
}

func (in *tenantConfig) DeepCopyObject() runtime.Object {
	out := *in
	for _, p := range []**int64{&out.Timeout, &out.Quota, &out.Internal} {
		if *p != nil {
			*p = new(**p)
		}
	}
	if out.Retries != nil {
		out.Retries = new(*out.Retries)
	}
	for _, p := range []**bool{&out.Verbose, &out.AlphaThing, &out.BetaThing} {
		if *p != nil {
			*p = new(**p)
		}
	}
	out.Labels, out.Hosts = maps.Clone(in.Labels), slices.Clone(in.Hosts)
	return &out
}

var tenantGV = schema.GroupVersion{Group: "tenant.test.strata.dev", Version: "v1"}

func tenantKind(t testing.TB) *scheme.Kind {
	t.Helper()
	return tenantKindDefaulting(t, nil)
}

// tenantKindDefaulting is tenantKind whose defaulting also calls more.
func tenantKindDefaulting(t testing.TB, more func(*tenantConfig)) *scheme.Kind {
	t.Helper()
	kind, err := scheme.New(scheme.Config{
		Group: tenantGV.Group, Kind: "tenantConfig", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypes(tenantGV, &tenantConfig{})
			s.AddTypeDefaultingFunc(&tenantConfig{}, func(o any) {
				c := o.(*tenantConfig)
				if c.Timeout == nil {
					c.Timeout = new(int64(60))
				}
				if more != nil {
					more(c)
				}
			})
			return nil
		}}},
		Validate: scheme.Validator(func(c *tenantConfig) field.ErrorList {
			if *c.Timeout <= 0 {
				return field.ErrorList{field.Invalid(field.NewPath("timeout"), *c.Timeout, "must be positive")}
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return kind
}

// testOptions are the options of the tests' resolvers.
func testOptions(t testing.TB) Options[*tenantConfig] {
	return Options[*tenantConfig]{
		Kind:      tenantKind(t),
		Namespace: "ops", ClusterConfigMap: "config", NamespaceConfigMaps: []string{"overrides"},
		Labels:  map[string]string{"config": "tenant"},
		Tenancy: tenancy.Policy{GateKey: "tenancy", GateOpen: "on", GateClosed: "off", LockKey: "locked", StabilityKey: "stability"},
	}
}

func newDryRun[T any](t testing.TB, o Options[T]) *DryRun[T] {
	t.Helper()
	d, err := NewDryRun(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newTestResolver resolves from objects: no cluster.
func newTestResolver(t testing.TB, mutate func(*Options[*tenantConfig])) *DryRun[*tenantConfig] {
	t.Helper()
	o := testOptions(t)
	if mutate != nil {
		mutate(&o)
	}
	return newDryRun(t, o)
}

func configMap(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, ResourceVersion: "1"}, Data: data}
}

func tenantCM(ns string, data map[string]string) *corev1.ConfigMap {
	return configMap(ns, "overrides", map[string]string{"config": "tenant"}, data)
}

func dropped(s *Snapshot[*tenantConfig]) map[string]string {
	out := map[string]string{}
	for _, d := range s.Rejected() {
		out["/"+d.Key] = d.Reason
	}
	return out
}

func TestTenantPolicy(t *testing.T) {
	r := newTestResolver(t, nil)
	everything := map[string]string{
		"timeout": "30", "retries": "0", "verbose": "false", "log-dir": "logs", "alpha-thing": "true", "beta-thing": "true",
		"quota": "9", "internal": "1", "tenancy": "on", "locked": "", "stability": "alpha",
	}
	for _, tc := range []struct {
		name     string
		cluster  map[string]string
		ns       string
		want     map[string]string // key → reason
		timeout  int64
		verbose  *bool
		alphaSet bool
	}{{
		name:    "gate closed: no tenant layer at all",
		cluster: map[string]string{"tenancy": "off"}, ns: "team", want: map[string]string{}, timeout: 60,
	}, {
		name:    "gate open, stable",
		cluster: map[string]string{"tenancy": "on", "locked": "retries"}, ns: "team", timeout: 30, verbose: new(false),
		want: map[string]string{
			"/log-dir": tenancy.ReasonPath, "/alpha-thing": tenancy.ReasonAlpha, "/beta-thing": tenancy.ReasonBeta, "/quota": tenancy.ReasonClusterOnly,
			"/internal": tenancy.ReasonNotOverridable, "/tenancy": tenancy.ReasonPolicyKey, "/locked": tenancy.ReasonPolicyKey, "/stability": tenancy.ReasonPolicyKey,
			"/retries": tenancy.ReasonLocked,
		},
	}, {
		name:    "beta allowed",
		cluster: map[string]string{"tenancy": "on", "stability": "beta"}, ns: "team", timeout: 30, verbose: new(false),
		want: map[string]string{
			"/log-dir": tenancy.ReasonPath, "/alpha-thing": tenancy.ReasonAlpha, "/quota": tenancy.ReasonClusterOnly,
			"/internal": tenancy.ReasonNotOverridable, "/tenancy": tenancy.ReasonPolicyKey, "/locked": tenancy.ReasonPolicyKey, "/stability": tenancy.ReasonPolicyKey,
		},
	}, {
		name: "alpha allowed", alphaSet: true,
		cluster: map[string]string{"tenancy": "on", "stability": "alpha"}, ns: "team", timeout: 30, verbose: new(false),
		want: map[string]string{
			"/log-dir": tenancy.ReasonPath, "/quota": tenancy.ReasonClusterOnly,
			"/internal": tenancy.ReasonNotOverridable, "/tenancy": tenancy.ReasonPolicyKey, "/locked": tenancy.ReasonPolicyKey, "/stability": tenancy.ReasonPolicyKey,
		},
	}, {
		name:    "system namespace",
		cluster: map[string]string{"tenancy": "on"}, ns: "kube-system", want: map[string]string{}, timeout: 60,
	}, {
		name:    "own namespace",
		cluster: map[string]string{"tenancy": "on"}, ns: "ops", want: map[string]string{}, timeout: 60,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := r.Resolve(tc.ns, []runtime.Object{configMap("ops", "config", nil, tc.cluster), tenantCM(tc.ns, everything)})
			if err != nil {
				t.Fatal(err)
			}
			if got := dropped(s); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("dropped:\n got %v\nwant %v", got, tc.want)
			}
			if *s.Object.Timeout != tc.timeout {
				t.Errorf("timeout %d, want %d", *s.Object.Timeout, tc.timeout)
			}
			if fmt.Sprint(s.Object.Verbose) != fmt.Sprint(tc.verbose) && (s.Object.Verbose == nil || *s.Object.Verbose != *tc.verbose) {
				t.Errorf("verbose %v, want %v: an explicit false is a value", s.Object.Verbose, tc.verbose)
			}
			if (s.Object.AlphaThing != nil) != tc.alphaSet {
				t.Errorf("alpha-thing set = %v, want %v", s.Object.AlphaThing != nil, tc.alphaSet)
			}
			if s.Object.LogDir != "" {
				t.Errorf("a tenant set a path: %q", s.Object.LogDir)
			}
		})
	}
}

func TestClusterPolicyErrors(t *testing.T) {
	r := newTestResolver(t, nil)
	for _, tc := range []struct {
		data map[string]string
		want string
	}{
		{map[string]string{"tenancy": "maybe"}, `key "tenancy": "maybe" is neither "off" nor "on"`},
		{map[string]string{"locked": "timeout, retires"}, `key "locked": "retires" is no configuration key`},
		{map[string]string{"stability": "gamma"}, `key "stability": "gamma" is none of stable, beta, alpha`},
		{map[string]string{"timeout": "0"}, `timeout: Invalid value: 0: must be positive`},
		{map[string]string{"timeout": "ten"}, `key "timeout": "ten"`},
		{map[string]string{"unknown": "1"}, `key "unknown": no such field`},
	} {
		_, err := r.Resolve("team", []runtime.Object{configMap("ops", "config", nil, tc.data)})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ops/config") {
			t.Errorf("%v: error %v, want one naming ops/config and %q", tc.data, err, tc.want)
		}
	}
}

func TestInvalidTenantLayerIgnoredAsAWhole(t *testing.T) {
	r := newTestResolver(t, func(o *Options[*tenantConfig]) { o.NamespaceConfigMaps = []string{"base", "overrides"} })
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
	good := configMap("team", "base", map[string]string{"config": "tenant"}, map[string]string{"retries": "4"})
	bad := tenantCM("team", map[string]string{"timeout": "-1", "verbose": "true"})
	s, err := r.Resolve("team", []runtime.Object{cluster, good, bad})
	if err != nil {
		t.Fatal(err)
	}
	if *s.Object.Timeout != 60 || s.Object.Verbose != nil || *s.Object.Retries != 4 {
		t.Errorf("got timeout %d verbose %v retries %v: the invalid layer must go as a whole, the valid one stay", *s.Object.Timeout, s.Object.Verbose, s.Object.Retries)
	}
	if len(s.Ignored()) != 1 || !strings.Contains(s.Ignored()[0].Error(), "namespace team/overrides") {
		t.Errorf("ignored %v", s.Ignored())
	}
	// Unlabelled: not a layer.
	s, _ = r.Resolve("team", []runtime.Object{cluster, configMap("team", "overrides", nil, map[string]string{"retries": "9"})})
	if s.Object.Retries != nil {
		t.Error("an unlabelled ConfigMap was applied")
	}
}

// cachedResolver is a resolver with n namespaces cached, every tenth with
// an override of its own, read through a Reader over literal objects.
func cachedResolver(tb testing.TB, n int) (*Resolver[*tenantConfig], []string, map[string]string, map[string]map[string]string) {
	r, names, cluster, overrides, _ := newCachedResolver(tb, n)
	return r, names, cluster, overrides
}

// cachedResolverReader is cachedResolver with the objects its Reader
// reads, to change them.
func cachedResolverReader(tb testing.TB, n int) (*Resolver[*tenantConfig], *objectReader) {
	r, _, _, _, objs := newCachedResolver(tb, n)
	return r, objs
}

func newCachedResolver(tb testing.TB, n int) (*Resolver[*tenantConfig], []string, map[string]string, map[string]map[string]string, *objectReader) {
	o := testOptions(tb)
	o.CacheSize = n
	clusterData := map[string]string{"tenancy": "on", "timeout": "120", "retries": "3", "verbose": "true"}
	objs := newObjectReader(configMap("ops", "config", nil, clusterData))
	names := make([]string, n)
	overrides := map[string]map[string]string{}
	for i := range names {
		names[i] = "namespace-" + strconv.Itoa(i)
		if i%10 == 0 {
			overrides[names[i]] = map[string]string{"timeout": strconv.Itoa(i + 1), "verbose": "false"}
			objs.set(tenantCM(names[i], overrides[names[i]]))
		}
	}
	r, err := NewFromReader(objs, o)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	for _, ns := range names {
		if _, err := r.ForNamespace(ctx, ns); err != nil {
			tb.Fatal(err)
		}
	}
	return r, names, clusterData, overrides, objs
}

func TestCachedHitAllocatesNothing(t *testing.T) {
	r, names, _, _ := cachedResolver(t, 1000)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		for _, ns := range names[:10] {
			if _, err := r.ForNamespace(ctx, ns); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("a cache hit allocates %v times", allocs)
	}
	if s, _ := r.ForNamespace(ctx, names[10]); *s.Object.Timeout != 11 || *s.Object.Verbose {
		t.Errorf("namespace-10: %+v", s.Object)
	}
}

// BenchmarkForNamespace compares a cached ForNamespace with 10,000
// namespaces cached against what a Tekton-style loader does on every call:
// merge the cluster and namespace maps under the policy, then parse the
// result into the typed struct.
func BenchmarkForNamespace(b *testing.B) {
	r, names, clusterData, overrides := cachedResolver(b, 10000)
	ctx := context.Background()
	b.Run("strata-cached", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s, _ := r.ForNamespace(ctx, names[i%len(names)])
			if s == nil {
				b.Fatal("no snapshot")
			}
			i++
		}
	})
	b.Run("remerge-and-parse", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c, err := remergeAndParse(clusterData, overrides[names[i%len(names)]])
			if err != nil || c.Timeout == nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// remergeAndParse is the per-call work of a loader that keeps raw maps: copy
// the cluster map, overlay the allowed namespace keys, and parse every key.
func remergeAndParse(cluster, ns map[string]string) (*tenantConfig, error) {
	allowed := map[string]bool{"timeout": true, "retries": true, "verbose": true}
	merged := make(map[string]string, len(cluster)+len(ns))
	for k, v := range cluster {
		merged[k] = v
	}
	if cluster["tenancy"] == "on" {
		for k, v := range ns {
			if allowed[k] {
				merged[k] = v
			}
		}
	}
	c := &tenantConfig{}
	for k, v := range merged {
		switch k {
		case "timeout":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, err
			}
			c.Timeout = &n
		case "retries":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return nil, err
			}
			c.Retries = new(int32(n))
		case "verbose":
			x, err := strconv.ParseBool(v)
			if err != nil {
				return nil, err
			}
			c.Verbose = &x
		case "tenancy":
			c.Tenancy = v
		}
	}
	return c.DeepCopyObject().(*tenantConfig), nil
}

// BenchmarkCacheMemory reports the heap held per cached namespace with
// 10,000 namespaces cached, one in ten with a ConfigMap of its own (the
// others share the cluster snapshot).
func BenchmarkCacheMemory(b *testing.B) {
	var r *Resolver[*tenantConfig]
	var before, after goruntime.MemStats
	for b.Loop() {
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		r, _, _, _ = cachedResolver(b, 10000)
		goruntime.GC()
		goruntime.ReadMemStats(&after)
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/10000, "heap-B/namespace")
	goruntime.KeepAlive(r)
}

// FuzzTenantConfigMap feeds arbitrary tenant ConfigMap data through the
// resolver: tenant input may be refused or ignored, but never fails a
// resolve, never panics, and never leaves a key the policy refuses.
func FuzzTenantConfigMap(f *testing.F) {
	r := newTestResolver(f, nil)
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "stability": "beta"})
	f.Add("timeout", "30", "verbose", "false")
	f.Add("log-dir", "../x", "quota", "1")
	f.Add("timeout", "-1", "alpha-thing", "true")
	f.Add("_example", "anything", "retries", "{a: [1")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		s, err := r.Resolve("team", []runtime.Object{cluster, tenantCM("team", map[string]string{k1: v1, k2: v2})})
		if err != nil {
			t.Fatalf("tenant input failed a resolve: %v", err)
		}
		if *s.Object.Timeout <= 0 || s.Object.LogDir != "" || s.Object.Quota != nil || s.Object.AlphaThing != nil {
			t.Fatalf("a refused or invalid tenant value took effect: %+v", s.Object)
		}
	})
}

// TestTenantConfigMapLimits sends the ConfigMaps a tenant can create to
// abuse the resolver: each is refused as a whole, and what the resolver
// says about it stays short, however large the ConfigMap.
func TestTenantConfigMapLimits(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
	huge := strings.Repeat("9", 1<<20)
	many := func(prefix string, n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%s%04d", prefix, i)] = "1"
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Options[*tenantConfig])
		data   map[string]string
		want   string
	}{
		{"a 1 MiB value", nil, map[string]string{"timeout": huge},
			"namespace team/overrides: ignored: 1048583 bytes of data, over the limit of 262144 bytes a ConfigMap may hold here"},
		{"too many keys", nil, many("_doc", 600),
			"namespace team/overrides: ignored: 600 keys, over the limit of 512 keys a ConfigMap may hold here"},
		{"a 1 MiB invalid value under a raised limit", func(o *Options[*tenantConfig]) { o.MaxConfigMapBytes = 2 << 20 },
			map[string]string{"timeout": huge + "x"}, `key "timeout": "999999`},
		{"four hundred unknown keys", nil, many("k", 400),
			`key "k0019": no such field; … and 380 more`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestResolver(t, tc.mutate)
			s, err := r.Resolve("team", []runtime.Object{cluster, tenantCM("team", tc.data)})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Ignored()) != 1 {
				t.Fatalf("ignored %v, want the tenant's ConfigMap", s.Ignored())
			}
			msg := s.Ignored()[0].Error()
			if !strings.Contains(msg, tc.want) || len(msg) > 4096 {
				t.Errorf("error (%d bytes) %.600q; want at most 4 KiB containing %q", len(msg), msg, tc.want)
			}
			if s.Object.Timeout == nil || *s.Object.Timeout != 60 {
				t.Errorf("timeout %v: nothing of the refused ConfigMap may apply", s.Object.Timeout)
			}
		})
	}
}

func TestDryRunRefusesDuplicates(t *testing.T) {
	r := newTestResolver(t, nil)
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
	a, b := tenantCM("team", map[string]string{"retries": "1"}), tenantCM("team", map[string]string{"retries": "2"})
	if _, err := r.Resolve("team", []runtime.Object{cluster, a, b}); err == nil || !strings.Contains(err.Error(), "ConfigMap team/overrides is given twice") {
		t.Errorf("two ConfigMaps team/overrides: %v", err)
	}
	// Past the objects unique searches linearly: a duplicate among many,
	// and a Namespace that shares a ConfigMap's name is no duplicate.
	many := []runtime.Object{cluster, a}
	for i := range 20 {
		many = append(many, configMap("team", fmt.Sprintf("other-%d", i), nil, nil))
	}
	many = append(many, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "overrides"}})
	if _, err := r.Resolve("team", many); err != nil {
		t.Errorf("22 distinct objects: %v", err)
	}
	if _, err := r.Resolve("team", append(many, b)); err == nil || !strings.Contains(err.Error(), "ConfigMap team/overrides is given twice") {
		t.Errorf("two ConfigMaps team/overrides among 23 objects: %v", err)
	}
}

// BenchmarkEvictingMiss resolves namespaces never seen before into a full
// cache, so that each resolve evicts one: the cost per miss must not grow
// with the cache (CLOCK, not a scan of every entry).
func BenchmarkEvictingMiss(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("cache=%d", n), func(b *testing.B) {
			r, _, _, _ := cachedResolver(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := r.ForNamespace(ctx, "fresh-"+strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkClusterChange changes the cluster ConfigMap under 10,000
// cached namespaces: each op applies one change and rebuilds every
// snapshot it affects.
func BenchmarkClusterChange(b *testing.B) {
	r, objs := cachedResolverReader(b, 10000)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		cm := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": strconv.Itoa(100 + i%2), "retries": "3"})
		cm.ResourceVersion = strconv.Itoa(i + 2)
		objs.set(cm)
		r.Invalidate(cm)
		i++
	}
}

// TestClusterChangeRebuildsInBatches changes the cluster ConfigMap under
// a thousand cached namespaces, several batches, while misses go on: every
// snapshot is current once the change is applied, each namespace is
// reported changed once, and the misses resolve under the new state.
func TestClusterChangeRebuildsInBatches(t *testing.T) {
	r, objs := cachedResolverReader(t, 1000)
	var mu sync.Mutex
	changed := map[string]int{}
	cancel := r.Subscribe(func(ns string, _, _ *Snapshot[*tenantConfig]) {
		mu.Lock()
		changed[ns]++
		mu.Unlock()
	})
	defer cancel()
	ctx := context.Background()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // misses that evict while the batches run
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := r.ForNamespace(ctx, "late-"+strconv.Itoa(i%50)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	cm := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "777", "retries": "3"})
	cm.ResourceVersion = "2"
	objs.set(cm)
	r.Invalidate(cm)
	close(stop)
	<-done
	if err := r.WaitForSubscribers(ctx); err != nil {
		t.Fatal(err)
	}
	stale := 0
	r.st.cache.each(func(ns string, e *entry[*tenantConfig]) {
		s := e.snap.Load()
		override := strings.HasPrefix(ns, "namespace-") && strings.HasSuffix(ns, "0")
		if !override && *s.Object.Timeout != 777 {
			stale++
		}
	})
	if stale > 0 {
		t.Errorf("%d snapshots still under the old cluster ConfigMap", stale)
	}
	mu.Lock()
	defer mu.Unlock()
	for ns, n := range changed {
		if n != 1 {
			t.Errorf("%s reported changed %d times", ns, n)
		}
	}
}

// TestParsedOncePerVersion: a DryRun keeps a namespace ConfigMap parsed
// by its namespace, name and version once it parsed it twice, and uses it
// again only with the data it was parsed from: one whose version is
// reused for other data (a test's, a dry run's) is parsed again, and so
// is another namespace's.
func TestParsedOncePerVersion(t *testing.T) {
	r := newTestResolver(t, nil)
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on"})
	timeout := func(cm *corev1.ConfigMap) string {
		t.Helper()
		s, err := r.Resolve(cm.Namespace, []runtime.Object{cluster, cm})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := s.Provenance().Lookup("/timeout")
		return v
	}
	cm := tenantCM("a", map[string]string{"timeout": "30"})
	if got := timeout(cm); got != "30" {
		t.Fatalf("timeout %s", got)
	}
	if _, _, ok := r.last.parsed.get(cm.DeepCopy(), nil); ok {
		t.Error("a ConfigMap read once is kept parsed")
	}
	if got := timeout(cm.DeepCopy()); got != "30" {
		t.Fatalf("timeout %s", got)
	}
	if _, _, ok := r.last.parsed.get(cm.DeepCopy(), nil); !ok {
		t.Error("a ConfigMap of one version and data read twice is not kept parsed")
	}
	cm.Data["timeout"] = "40" // the same version, other data
	if got := timeout(cm); got != "40" {
		t.Errorf("a version reused for other data: timeout %s, want 40", got)
	}
	if got := timeout(tenantCM("b", map[string]string{"timeout": "50"})); got != "50" {
		t.Errorf("another namespace's: timeout %s, want 50", got)
	}
}
