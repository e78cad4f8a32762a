package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// server is the etcd and kube-apiserver the tests of this package share;
// each test works in namespaces of its own.
var server *kubetest.Server

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, &server)) }

var seq atomic.Int64

// fixture is one test's system namespace and resolver.
type fixture struct {
	t      *testing.T
	c      kubernetes.Interface
	system string
	prefix string
	reg    metrics.KubeRegistry
	r      *resolver
}

// newFixture creates a system namespace for the test, with the cluster
// ConfigMap holding data (nil: none).
func newFixture(t *testing.T, data map[string]string) *fixture {
	t.Helper()
	n := seq.Add(1)
	f := &fixture{t: t, c: server.Client(t), system: fmt.Sprintf("sys-%d", n), prefix: fmt.Sprintf("t%d-", n)}
	f.namespace(f.system, nil)
	if data != nil {
		f.put(f.system, ClusterConfigMap, nil, data)
	}
	return f
}

// start starts a resolver over the fixture's namespaces.
func (f *fixture) start(mode string, cacheSize int) *resolver {
	f.t.Helper()
	o, err := optionsIn(f.system, cacheSize)
	if err != nil {
		f.t.Fatal(err)
	}
	f.reg = metrics.NewKubeRegistry()
	o.Metrics = namespaced.NewMetrics("test")
	if _, err := o.Metrics.Register(f.reg.Registerer()); err != nil {
		f.t.Fatal(err)
	}
	r, err := newResolver(f.c, mode, o)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(r.Stop)
	f.r = r
	return r
}

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func configMapObject(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: data}
}

func (f *fixture) namespace(name string, labels map[string]string) string {
	f.t.Helper()
	n := namespaceObject(name)
	n.Labels = labels
	_, err := f.c.CoreV1().Namespaces().Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatal(err)
	}
	return name
}

// tenant creates a namespace of the test.
func (f *fixture) tenant(name string) string { return f.namespace(f.prefix+name, nil) }

// put creates or replaces a ConfigMap.
func (f *fixture) put(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	f.t.Helper()
	ctx := context.Background()
	cms := f.c.CoreV1().ConfigMaps(ns)
	cm := configMapObject(ns, name, labels, data)
	got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := cms.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			f.t.Fatal(gerr)
		}
		cm.ResourceVersion = cur.ResourceVersion
		got, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return got
}

// override puts the namespace's labelled strata-overrides ConfigMap.
func (f *fixture) override(ns string, data map[string]string) *corev1.ConfigMap {
	return f.put(ns, OverridesName, OverrideLabels, data)
}

func (f *fixture) resolve(ns string) *namespaced.Snapshot[*v1alpha1.JobDefaults] {
	f.t.Helper()
	s, err := f.r.ForNamespace(context.Background(), ns)
	if err != nil {
		f.t.Fatalf("ForNamespace(%s): %v", ns, err)
	}
	return s
}

// eventually polls cond until it returns "" or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	watchtest.Eventually(t, timeout, cond)
}

// timeout reads a namespace's default-timeout-seconds until it is want.
func (f *fixture) waitTimeout(ns string, want int64) {
	f.t.Helper()
	eventually(f.t, 10*time.Second, func() string {
		if got := *f.resolve(ns).Object.DefaultTimeoutSeconds; got != want {
			return fmt.Sprintf("%s: default-timeout-seconds is %d, want %d", ns, got, want)
		}
		return ""
	})
}

// metric is the value of the resolver's metric name with labels.
func (f *fixture) metric(name string, labels map[string]string) float64 {
	f.t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

func rejected(s *namespaced.Snapshot[*v1alpha1.JobDefaults]) map[string]string {
	out := map[string]string{}
	for _, d := range s.Rejected() {
		out[d.Key] = d.Reason
	}
	return out
}

var openGate = map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "1800", "max-timeout-seconds": "7200"}

func TestOverridesAndPolicy(t *testing.T) {
	f := newFixture(t, map[string]string{
		"enforced-config-level":   "namespace",
		"non-overridable-fields":  "default-service-account",
		"default-timeout-seconds": "1800", "max-timeout-seconds": "7200",
		"default-service-account": "job-runner",
	})
	a, b := f.tenant("a"), f.tenant("b")
	f.override(a, map[string]string{
		"default-timeout-seconds":            "600",
		"default-ttl-seconds-after-finished": "0",         // an explicit zero is a value, not "unset"
		"default-service-account":            "admin",     // locked
		"max-timeout-seconds":                "100000",    // cluster-only
		"enforced-config-level":              "namespace", // the gate itself
		"non-overridable-fields":             "",          // the lockdown list itself
	})
	f.put(b, OverridesName, nil, map[string]string{"default-timeout-seconds": "60"}) // no labels
	f.put("kube-system", OverridesName, OverrideLabels, map[string]string{"default-timeout-seconds": "60"})
	t.Cleanup(func() {
		_ = f.c.CoreV1().ConfigMaps("kube-system").Delete(context.Background(), OverridesName, metav1.DeleteOptions{})
	})
	f.start(ModeLazy, 0)

	s := f.resolve(a)
	if got := *s.Object.DefaultTimeoutSeconds; got != 600 {
		t.Errorf("team a: default-timeout-seconds = %d, want the namespace's 600", got)
	}
	if ttl := s.Object.DefaultTTLSecondsAfterFinished; ttl == nil || *ttl != 0 {
		t.Errorf("team a: default-ttl-seconds-after-finished = %v, want an explicit 0", ttl)
	}
	if got := s.Object.DefaultServiceAccount; got != "job-runner" {
		t.Errorf("team a: default-service-account = %q, want the cluster's (locked)", got)
	}
	if got := *s.Object.MaxTimeoutSeconds; got != 7200 {
		t.Errorf("team a: max-timeout-seconds = %d, want the cluster's (cluster-only)", got)
	}
	want := map[string]string{
		"default-service-account": tenancy.ReasonLocked,
		"max-timeout-seconds":     tenancy.ReasonClusterOnly,
		"enforced-config-level":   tenancy.ReasonPolicyKey,
		"non-overridable-fields":  tenancy.ReasonPolicyKey,
	}
	if got := rejected(s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("team a: rejected %v, want %v", got, want)
	}
	for _, d := range s.Rejected() {
		if d.Source.Origin != namespaced.OriginNamespace || d.Source.Name != a+"/"+OverridesName || d.Source.Version == "" {
			t.Errorf("rejected key %s names source %+v, want the namespace ConfigMap and its version", d.Key, d.Source)
		}
	}
	p, _ := s.Provenance().Explain("/default-timeout-seconds")
	if p.Source.Origin != namespaced.OriginNamespace || len(p.Shadowed) != 1 || p.Shadowed[0].Source.Origin != namespaced.OriginCluster {
		t.Errorf("provenance of default-timeout-seconds: %+v", p)
	}
	if got := fmt.Sprint(s.Overrides()); got != "[default-timeout-seconds default-ttl-seconds-after-finished]" {
		t.Errorf("overrides: %s", got)
	}
	if got := f.metric("test_rejected_tenant_keys_total", map[string]string{"reason": tenancy.ReasonLocked}); got < 1 {
		t.Errorf("rejected_tenant_keys_total{reason=locked} = %v", got)
	}

	for _, ns := range []string{b, "kube-system", f.system} {
		if got := *f.resolve(ns).Object.DefaultTimeoutSeconds; got != 1800 {
			t.Errorf("%s: default-timeout-seconds = %d, want the cluster's 1800 (its ConfigMap is not a namespace layer)", ns, got)
		}
	}
	// A second read is a cache hit: the same snapshot.
	if f.resolve(a) != s {
		t.Error("a cached namespace returned a different snapshot")
	}
	// An update reaches the snapshot through the namespace's watch.
	f.override(a, map[string]string{"default-timeout-seconds": "900"})
	f.waitTimeout(a, 900)
	if len(f.resolve(a).Rejected()) != 0 {
		t.Errorf("rejections outlived the ConfigMap version that caused them: %v", f.resolve(a).Rejected())
	}
	// Removing a required label removes the layer.
	f.put(a, OverridesName, map[string]string{"app.kubernetes.io/part-of": "strata-example"}, map[string]string{"default-timeout-seconds": "900"})
	f.waitTimeout(a, 1800)
}

func TestGateAndLockChanges(t *testing.T) {
	f := newFixture(t, openGate)
	a := f.tenant("a")
	f.override(a, map[string]string{"default-timeout-seconds": "600", "default-service-account": "builder"})
	f.start(ModeLazy, 0)
	if s := f.resolve(a); *s.Object.DefaultTimeoutSeconds != 600 || s.Object.DefaultServiceAccount != "builder" {
		t.Fatalf("overrides not applied: %+v", s.Object)
	}
	watches := func() float64 { return f.metric("test_namespace_watches", nil) }
	if watches() != 1 {
		t.Fatalf("namespace watches = %v, want 1", watches())
	}
	// Locking a key recomputes the cached snapshot.
	lock := map[string]string{"non-overridable-fields": "default-service-account"}
	for k, v := range openGate {
		lock[k] = v
	}
	f.put(f.system, ClusterConfigMap, nil, lock)
	eventually(t, 10*time.Second, func() string {
		if s := f.resolve(a); s.Object.DefaultServiceAccount != "" || rejected(s)["default-service-account"] != tenancy.ReasonLocked {
			return fmt.Sprintf("service account %q, rejected %v", s.Object.DefaultServiceAccount, rejected(s))
		}
		return ""
	})
	if got := *f.resolve(a).Object.DefaultTimeoutSeconds; got != 600 {
		t.Errorf("locking another key changed default-timeout-seconds to %d", got)
	}
	// Closing the gate leaves out every namespace layer; the namespace is
	// still followed, so that opening it reads nothing.
	closed := map[string]string{"enforced-config-level": "cluster", "default-timeout-seconds": "1800", "max-timeout-seconds": "7200"}
	f.put(f.system, ClusterConfigMap, nil, closed)
	f.waitTimeout(a, 1800)
	if got := f.resolve(a).Rejected(); len(got) != 0 {
		t.Errorf("a closed gate applies no tenant layer, but rejected %v", got)
	}
	// A change made while the gate is closed is held, and applies when it
	// opens.
	f.override(a, map[string]string{"default-timeout-seconds": "700"})
	if w := watches(); w != 1 {
		t.Errorf("namespace watches = %v with the gate closed, want 1", w)
	}
	f.put(f.system, ClusterConfigMap, nil, openGate)
	f.waitTimeout(a, 700)
}

func TestInvalidTenantConfigMap(t *testing.T) {
	f := newFixture(t, openGate)
	a := f.tenant("a")
	cm := f.override(a, map[string]string{"default-timeout-seconds": "600", "default-ttl-seconds-after-finished": "-60"})
	f.start(ModeLazy, 0)
	s := f.resolve(a)
	if *s.Object.DefaultTimeoutSeconds != 1800 || s.Object.DefaultTTLSecondsAfterFinished != nil {
		t.Errorf("an invalid ConfigMap must be ignored as a whole; got timeout %d, ttl %v", *s.Object.DefaultTimeoutSeconds, s.Object.DefaultTTLSecondsAfterFinished)
	}
	if len(s.Ignored()) != 1 || !strings.Contains(s.Ignored()[0].Error(), a+"/"+OverridesName) || !strings.Contains(s.Ignored()[0].Error(), "default-ttl-seconds-after-finished") {
		t.Errorf("ignored: %v", s.Ignored())
	}
	eventually(t, 10*time.Second, func() string {
		events, err := f.c.CoreV1().Events(a).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "ConfigMap", "involvedObject.name": OverridesName}.String(),
		})
		if err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "InvalidConfiguration" && e.InvolvedObject.UID == cm.UID &&
				strings.Contains(e.Message, "must be greater than or equal to 0") {
				return ""
			}
		}
		return fmt.Sprintf("no InvalidConfiguration event on %s/%s: %v", a, OverridesName, events.Items)
	})
	if got := f.metric("test_invalid_configmaps_total", map[string]string{"kind": namespaced.OriginNamespace}); got != 1 {
		t.Errorf("invalid_configmaps_total{kind=namespace} = %v, want 1", got)
	}
	// A value that does not even parse is ignored the same way.
	f.override(a, map[string]string{"default-ttl-seconds-after-finished": "soon"})
	eventually(t, 10*time.Second, func() string {
		if s := f.resolve(a); len(s.Ignored()) != 1 || !strings.Contains(s.Ignored()[0].Error(), `"soon"`) {
			return fmt.Sprintf("ignored: %v", s.Ignored())
		}
		return ""
	})
	// Fixed, it applies.
	f.override(a, map[string]string{"default-timeout-seconds": "700"})
	f.waitTimeout(a, 700)
	// A timeout beyond the operator's bound is refused, that key alone,
	// with the bound in the reason; the rest of the ConfigMap applies.
	f.override(a, map[string]string{"default-timeout-seconds": "9000", "default-ttl-seconds-after-finished": "60"})
	eventually(t, 10*time.Second, func() string {
		s := f.resolve(a)
		if got := s.Object.DefaultTTLSecondsAfterFinished; got == nil || *got != 60 || *s.Object.DefaultTimeoutSeconds != 1800 || len(s.Ignored()) != 0 {
			return fmt.Sprintf("ttl %v, timeout %d, ignored %v", got, *s.Object.DefaultTimeoutSeconds, s.Ignored())
		}
		if len(s.Rejected()) != 1 || s.Rejected()[0].Why() != "above the operator's bound: 9000 is not at most 7200, cluster key max-timeout-seconds" {
			return fmt.Sprintf("rejected %v", s.Rejected())
		}
		return ""
	})
}

func TestClusterConfigMapLifecycle(t *testing.T) {
	f := newFixture(t, nil)
	a := f.tenant("a")
	f.start(ModeLazy, 0)
	if got := *f.resolve(a).Object.DefaultTimeoutSeconds; got != v1alpha1.DefaultTimeoutSeconds {
		t.Fatalf("with no cluster ConfigMap: %d, want the default", got)
	}
	f.put(f.system, ClusterConfigMap, nil, map[string]string{"default-timeout-seconds": "1200"})
	f.waitTimeout(a, 1200)
	// An invalid update is refused; the last good configuration stays.
	f.put(f.system, ClusterConfigMap, nil, map[string]string{"default-timeout-seconds": "-5"})
	eventually(t, 10*time.Second, func() string {
		if got := f.metric("test_invalid_configmaps_total", map[string]string{"kind": namespaced.OriginCluster}); got != 1 {
			return fmt.Sprintf("invalid_configmaps_total{kind=cluster} = %v", got)
		}
		return ""
	})
	if got := *f.resolve(a).Object.DefaultTimeoutSeconds; got != 1200 {
		t.Errorf("after an invalid update: %d, want the last good 1200", got)
	}
	// Deleted: back to defaults.
	if err := f.c.CoreV1().ConfigMaps(f.system).Delete(context.Background(), ClusterConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitTimeout(a, v1alpha1.DefaultTimeoutSeconds)
	if src := f.resolve(a).Sources(); len(src) != 0 {
		t.Errorf("sources after deletion: %v", src)
	}
}

func TestInvalidClusterConfigMapAtStart(t *testing.T) {
	f := newFixture(t, map[string]string{"enforced-config-level": "tenants"})
	o, err := optionsIn(f.system, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := namespaced.NewLazy(f.c, o)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), f.system+"/"+ClusterConfigMap) || !strings.Contains(err.Error(), "enforced-config-level") {
		t.Fatalf("Start with an invalid cluster ConfigMap: %v", err)
	}
	o.StartOnDefaults = true
	r, err = namespaced.NewLazy(f.c, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("StartOnDefaults: %v", err)
	}
	defer r.Stop()
	s, err := r.ForNamespace(context.Background(), "default")
	if err != nil || *s.Object.DefaultTimeoutSeconds != v1alpha1.DefaultTimeoutSeconds {
		t.Fatalf("StartOnDefaults: %v, %v", s, err)
	}
}

// TestLazyModeSharesOneWatch resolves namespaces in Lazy mode and counts
// the ConfigMap watches kube-apiserver holds: none per namespace, and two
// however many namespaces are cached: the cluster ConfigMap's, and the
// shared one, cluster-wide (both select one name, which kube-apiserver
// counts under scope "resource"); the namespaces it follows come and go
// with the cache.
func TestLazyModeSharesOneWatch(t *testing.T) {
	f := newFixture(t, openGate)
	a, b, c := f.tenant("a"), f.tenant("b"), f.tenant("c")
	for i, ns := range []string{a, b, c} {
		f.override(ns, map[string]string{"default-timeout-seconds": fmt.Sprint(100 * (i + 1))})
	}
	// Watches of earlier tests' resolvers close asynchronously on the
	// server: wait until its counts settle.
	counts := func() [2]float64 {
		return [2]float64{serverWatches(t, "namespace"), serverWatches(t, "cluster") + serverWatches(t, "resource")}
	}
	before := counts()
	for settled := false; !settled; {
		time.Sleep(300 * time.Millisecond) // a quiet period: nothing signals that no more will come
		now := counts()
		settled, before = now == before, now
	}
	f.start(ModeLazy, 2)
	f.resolve(a)
	f.resolve(b)
	f.resolve(c) // evicts a
	eventually(t, 10*time.Second, func() string {
		now := counts()
		if now[0] != before[0] || now[1] != before[1]+2 {
			return fmt.Sprintf("the API server holds %v new namespace-wide and %v new other ConfigMap watches, want 0 and 2", now[0]-before[0], now[1]-before[1])
		}
		return ""
	})
	if got := f.metric("test_namespace_watches", nil); got != 2 {
		t.Errorf("followed namespaces = %v, want 2", got)
	}
	if got := f.metric("test_namespace_cache_evictions_total", nil); got != 1 {
		t.Errorf("evictions = %v, want 1", got)
	}
	// A cached namespace's change comes through the shared watch.
	f.override(c, map[string]string{"default-timeout-seconds": "333"})
	f.waitTimeout(c, 333)
	// An evicted namespace is read afresh on its next resolve.
	f.override(a, map[string]string{"default-timeout-seconds": "150"})
	if got := *f.resolve(a).Object.DefaultTimeoutSeconds; got != 150 {
		t.Errorf("evicted namespace re-read: %d, want 150", got)
	}
}

// serverWatches is kube-apiserver's own count of open ConfigMap watches
// of scope ("namespace", "cluster", or "resource" for one name).
func serverWatches(t *testing.T, scope string) float64 {
	t.Helper()
	body, err := server.Client(t).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `resource="configmaps"`) &&
			strings.Contains(line, `scope="`+scope+`"`) && strings.Contains(line, `verb="WATCH"`) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			return v
		}
	}
	return 0
}

// TestAPIServerRestart stops kube-apiserver while a namespace is watched
// (etcd keeps running), changes nothing it could not see, starts it again,
// and checks that changes made once it is back reach the snapshots: the
// shared ConfigMap watch and the cluster informer both resume.
func TestAPIServerRestart(t *testing.T) {
	own := kubetest.Start(t) // a server of its own: the others keep theirs
	saved := server
	server = own
	defer func() { server = saved }()
	f := newFixture(t, openGate)
	a := f.tenant("a")
	f.override(a, map[string]string{"default-timeout-seconds": "600"})
	f.start(ModeLazy, 0)
	f.waitTimeout(a, 600)

	own.StopAPIServer()
	// Cached snapshots keep serving while the server is away.
	if got := *f.resolve(a).Object.DefaultTimeoutSeconds; got != 600 {
		t.Fatalf("during the outage: %d", got)
	}
	time.Sleep(2 * time.Second) // for the watches to fail and retry while the server is away: nothing announces a failed watch
	own.StartAPIServer(t)

	f.override(a, map[string]string{"default-timeout-seconds": "650"})
	eventually(t, 30*time.Second, func() string {
		if got := *f.resolve(a).Object.DefaultTimeoutSeconds; got != 650 {
			return fmt.Sprintf("namespace update after the restart not seen: %d", got)
		}
		return ""
	})
	f.put(f.system, ClusterConfigMap, nil, map[string]string{
		"enforced-config-level": "namespace", "default-timeout-seconds": "1800", "max-timeout-seconds": "7200",
		"non-overridable-fields": "default-timeout-seconds",
	})
	eventually(t, 30*time.Second, func() string {
		if got := *f.resolve(a).Object.DefaultTimeoutSeconds; got != 1800 {
			return fmt.Sprintf("cluster update after the restart not seen: %d", got)
		}
		return ""
	})
}

// TestInformerModeAndSelectors runs the cluster-wide informer mode with
// selector layers: a selector ConfigMap applies to the namespaces its
// selector matches, below the namespace's own ConfigMap, most generic
// first; namespace label changes and selector changes reach the snapshots.
func TestInformerModeAndSelectors(t *testing.T) {
	f := newFixture(t, openGate)
	gold := f.namespace(f.prefix+"gold", map[string]string{"tier": "gold", "team": "pay"})
	plain := f.tenant("plain")
	selector := func(name, sel string, data map[string]string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: f.system,
			Labels:      map[string]string{"config.strata.dev/type": "selector"},
			Annotations: map[string]string{namespaced.DefaultSelectorAnnotation: sel},
		}, Data: data}
		if _, err := f.c.CoreV1().ConfigMaps(f.system).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	selector("gold-pay", "tier=gold,team=pay", map[string]string{"default-timeout-seconds": "300"})
	selector("gold", "tier=gold", map[string]string{"default-timeout-seconds": "200", "default-ttl-seconds-after-finished": "30"})

	o, err := optionsIn(f.system, 0)
	if err != nil {
		t.Fatal(err)
	}
	o.Selectors = &namespaced.Selectors{Labels: map[string]string{"config.strata.dev/type": "selector"}}
	r, err := namespaced.NewInformer(f.c, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	f.r = r

	s := f.resolve(gold)
	if got := *s.Object.DefaultTimeoutSeconds; got != 300 {
		t.Errorf("gold: %d, want the two-term selector's 300 over the one-term selector's 200", got)
	}
	if ttl := s.Object.DefaultTTLSecondsAfterFinished; ttl == nil || *ttl != 30 {
		t.Errorf("gold: ttl %v, want 30 from the one-term selector", ttl)
	}
	p, _ := s.Provenance().Explain("/default-timeout-seconds")
	if p.Source.Name != f.system+"/gold-pay" || len(p.Shadowed) != 2 || p.Shadowed[0].Source.Name != f.system+"/gold" {
		t.Errorf("gold provenance: %+v", p)
	}
	if got := *f.resolve(plain).Object.DefaultTimeoutSeconds; got != 1800 {
		t.Errorf("plain: %d, want the cluster's", got)
	}
	// The namespace's own ConfigMap is above every selector.
	f.override(gold, map[string]string{"default-timeout-seconds": "400"})
	f.waitTimeout(gold, 400)
	// A label change moves a namespace into a selector's reach.
	n, err := f.c.CoreV1().Namespaces().Get(context.Background(), plain, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["tier"] = "gold"
	if _, err := f.c.CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitTimeout(plain, 200)
	// A selector's change reaches every namespace it matches.
	if err := f.c.CoreV1().ConfigMaps(f.system).Delete(context.Background(), "gold", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitTimeout(plain, 1800)
	eventually(t, 10*time.Second, func() string {
		if ttl := f.resolve(gold).Object.DefaultTTLSecondsAfterFinished; ttl != nil {
			return fmt.Sprintf("gold still has the deleted selector's ttl %d", *ttl)
		}
		return ""
	})
}
