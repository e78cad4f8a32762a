package namespaced

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/stratacfg/strata/merge"
)

// notes records what Subscribe delivers, checking that each new snapshot
// is already what ForNamespace returns.
type notes struct {
	t  *testing.T
	r  *Resolver[*tenantConfig]
	mu sync.Mutex
	ns []string
}

func (n *notes) record(ns string, old, new *Snapshot[*tenantConfig]) {
	if got, err := n.r.ForNamespace(context.Background(), ns); err != nil || got != new {
		n.t.Errorf("%s: notified before the new snapshot was readable", ns)
	}
	if old == new {
		n.t.Errorf("%s: notified with the same snapshot", ns)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ns = append(n.ns, ns)
}

func (n *notes) take() []string {
	if err := n.r.WaitForSubscribers(context.Background()); err != nil {
		n.t.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.ns
	n.ns = nil
	slices.Sort(out)
	return out
}

// readerResolver is a started NewFromReader resolver over objs with
// namespaces a, b and c cached, and what its subscription saw.
func readerResolver(t *testing.T, objs *objectReader, mutate func(*Options[*tenantConfig])) (*Resolver[*tenantConfig], *notes) {
	t.Helper()
	r := cachedReader(t, objs, mutate)
	n := &notes{t: t, r: r}
	cancel := r.Subscribe(n.record)
	t.Cleanup(cancel)
	return r, n
}

// cachedReader is a started NewFromReader resolver over objs with
// namespaces a, b and c cached.
func cachedReader(t *testing.T, objs Reader, mutate func(*Options[*tenantConfig])) *Resolver[*tenantConfig] {
	t.Helper()
	o := testOptions(t)
	if mutate != nil {
		mutate(&o)
	}
	r, err := NewFromReader(objs, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	for _, ns := range []string{"a", "b", "c"} {
		if _, err := r.ForNamespace(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestSubscribe(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"})
	objs := newObjectReader(cluster, tenantCM("a", map[string]string{"timeout": "5"}))
	r, n := readerResolver(t, objs, nil)
	ctx := context.Background()
	timeout := func(ns string) int64 {
		s, err := r.ForNamespace(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		return *s.Object.Timeout
	}

	// A namespace edit notifies that namespace, once.
	edited := tenantCM("a", map[string]string{"timeout": "7"})
	edited.ResourceVersion = "2"
	objs.set(edited)
	r.Invalidate(edited)
	if got := n.take(); fmt.Sprint(got) != "[a]" || timeout("a") != 7 {
		t.Errorf("namespace edit: notified %v, timeout %d", got, timeout("a"))
	}
	// Invalidating what did not change notifies nothing.
	r.Invalidate(edited)
	if got := n.take(); len(got) != 0 {
		t.Errorf("an unchanged ConfigMap notified %v", got)
	}
	// A cluster edit notifies every cached namespace, once each.
	cl := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "200"})
	cl.ResourceVersion = "2"
	objs.set(cl)
	r.Invalidate(cl)
	if got := n.take(); fmt.Sprint(got) != "[a b c]" || timeout("b") != 200 || timeout("a") != 7 {
		t.Errorf("cluster edit: notified %v, timeouts %d %d", got, timeout("a"), timeout("b"))
	}
	// A namespace ConfigMap created in a cached namespace.
	created := tenantCM("b", map[string]string{"timeout": "9"})
	objs.set(created)
	r.Invalidate(created)
	if got := n.take(); fmt.Sprint(got) != "[b]" || timeout("b") != 9 {
		t.Errorf("create: notified %v, timeout %d", got, timeout("b"))
	}
	// Deleted: the cluster value again.
	objs.del("b", "overrides")
	r.Invalidate(created)
	if got := n.take(); fmt.Sprint(got) != "[b]" || timeout("b") != 200 {
		t.Errorf("delete: notified %v, timeout %d", got, timeout("b"))
	}
	// Closing the gate notifies the namespaces it changes.
	closed := configMap("ops", "config", nil, map[string]string{"tenancy": "off", "timeout": "200"})
	closed.ResourceVersion = "3"
	objs.set(closed)
	r.Invalidate(closed)
	if got := n.take(); !slices.Contains(got, "a") || timeout("a") != 200 {
		t.Errorf("gate closed: notified %v, timeout %d", got, timeout("a"))
	}
	// An invalid cluster ConfigMap is refused: nothing changes.
	bad := configMap("ops", "config", nil, map[string]string{"tenancy": "maybe"})
	bad.ResourceVersion = "4"
	objs.set(bad)
	r.Invalidate(bad)
	if got := n.take(); len(got) != 0 || timeout("a") != 200 {
		t.Errorf("invalid cluster: notified %v, timeout %d", got, timeout("a"))
	}
}

func TestSubscribeCancel(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r, n := readerResolver(t, objs, nil)
	calls := 0
	cancel := r.Subscribe(func(string, *Snapshot[*tenantConfig], *Snapshot[*tenantConfig]) { calls++ })
	cancel()
	cm := tenantCM("a", map[string]string{"timeout": "3"})
	objs.set(cm)
	r.Invalidate(cm)
	if calls != 0 || len(n.take()) != 1 {
		t.Errorf("a cancelled subscriber was called %d times", calls)
	}
}

func TestSelectorChangeNotifiesWhatItMatches(t *testing.T) {
	withLabels := func(name string, ls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ls}}
	}
	sel := func(rv, selector, timeout string) *corev1.ConfigMap {
		cm := configMap("ops", "gold", map[string]string{"layer": "selector"}, map[string]string{"timeout": timeout})
		cm.ResourceVersion, cm.UID = rv, "gold-uid"
		cm.Annotations = map[string]string{DefaultSelectorAnnotation: selector}
		return cm
	}
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}),
		withLabels("a", map[string]string{"tier": "gold"}), withLabels("b", map[string]string{"tier": "silver"}), withLabels("c", nil),
		sel("1", "tier=gold", "300"))
	r, n := readerResolver(t, objs, func(o *Options[*tenantConfig]) {
		o.Selectors = &Selectors{Labels: map[string]string{"layer": "selector"}}
	})
	ctx := context.Background()
	if s, _ := r.ForNamespace(ctx, "a"); *s.Object.Timeout != 300 {
		t.Fatalf("a: timeout %d", *s.Object.Timeout)
	}
	next := sel("2", "tier in (gold,silver)", "300")
	objs.set(next)
	r.Invalidate(next)
	// a's selector layer has a new version; b gets it; c is untouched.
	if got := n.take(); fmt.Sprint(got) != "[a b]" {
		t.Errorf("selector change notified %v", got)
	}
	// A namespace relabelled into a selector.
	objs.set(withLabels("c", map[string]string{"tier": "gold"}))
	r.Invalidate(withLabels("c", nil))
	if got := n.take(); fmt.Sprint(got) != "[c]" {
		t.Errorf("relabel notified %v", got)
	}
}

// TestSubscriberCallsBack calls Invalidate and ForNamespace, a cached
// namespace and a miss, from inside a subscriber: nothing waits for the
// subscriber to return (subscribers used to run under the refresh lock,
// and such a call hung for ever).
func TestSubscriberCallsBack(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r, n := readerResolver(t, objs, nil)
	other := tenantCM("b", map[string]string{"timeout": "4"})
	objs.set(other)
	called := make(chan error, 10)
	var once sync.Once
	cancel := r.Subscribe(func(ns string, _, new *Snapshot[*tenantConfig]) {
		once.Do(func() {
			r.Invalidate(other) // another namespace changes from inside the call
			if s, err := r.ForNamespace(context.Background(), ns); err != nil || s != new {
				called <- fmt.Errorf("ForNamespace(%s) from a subscriber: %v, %v", ns, s, err)
				return
			}
			if _, err := r.ForNamespace(context.Background(), "not-cached-yet"); err != nil {
				called <- err
				return
			}
			called <- nil
		})
	})
	defer cancel()
	edited := tenantCM("a", map[string]string{"timeout": "7"})
	objs.set(edited)
	go r.Invalidate(edited) // a hang is this test's failure, not the binary's
	select {
	case err := <-called:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a subscriber calling back into the resolver hung")
	}
	if got := n.take(); fmt.Sprint(got) != "[a b]" {
		t.Errorf("notified %v, want a, then b from the Invalidate the subscriber made", got)
	}
}

// TestSlowSubscriberDelaysOnlyItself blocks one subscriber: another still
// hears of every change, a miss still resolves, and the blocked one, once
// released, sees each namespace's changes folded into one, from the
// snapshot it saw last to the newest.
func TestSlowSubscriberDelaysOnlyItself(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r := cachedReader(t, objs, nil)
	release, entered := make(chan struct{}), make(chan struct{}, 10)
	type seen struct {
		ns       string
		old, new int64
	}
	var mu sync.Mutex
	var slow []seen
	timeoutOf := func(s *Snapshot[*tenantConfig]) int64 {
		if s.Object.Timeout == nil {
			return 0
		}
		return *s.Object.Timeout
	}
	cancelSlow := r.Subscribe(func(ns string, old, new *Snapshot[*tenantConfig]) {
		entered <- struct{}{}
		<-release
		mu.Lock()
		defer mu.Unlock()
		slow = append(slow, seen{ns, timeoutOf(old), timeoutOf(new)})
	})
	defer cancelSlow()
	fast := make(chan string, 100)
	cancelFast := r.Subscribe(func(ns string, _, _ *Snapshot[*tenantConfig]) { fast <- ns })
	defer cancelFast()

	for i := 1; i <= 5; i++ {
		cm := tenantCM("a", map[string]string{"timeout": strconv.Itoa(i)})
		cm.ResourceVersion = strconv.Itoa(i + 1)
		objs.set(cm)
		applied := make(chan struct{})
		go func() { r.Invalidate(cm); close(applied) }()
		select {
		case <-applied:
		case <-time.After(10 * time.Second):
			t.Fatalf("change %d: a blocked subscriber held up the change", i)
		}
		select {
		case ns := <-fast:
			if ns != "a" {
				t.Fatalf("fast subscriber told of %s", ns)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("change %d: a blocked subscriber held up another", i)
		}
		if i == 1 {
			<-entered // the slow one is inside its first call
		}
	}
	missed := make(chan error, 1)
	go func() {
		_, err := r.ForNamespace(context.Background(), "fresh")
		missed <- err
	}()
	select {
	case err := <-missed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a blocked subscriber held up a miss")
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitForSubscribers(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The first change was under way when the rest came; they fold into
	// one, from timeout 1 (what it saw) to 5; the first went from the
	// default, 60.
	if fmt.Sprint(slow) != "[{a 60 1} {a 1 5}]" {
		t.Errorf("the slow subscriber saw %v, want [{a 60 1} {a 1 5}]", slow)
	}
}

// TestSubscribeAcrossRestart stops a resolver: its subscription ends, and
// one made after it is started again is called.
func TestSubscribeAcrossRestart(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r, before := readerResolver(t, objs, nil)
	r.Stop()
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := &notes{t: t, r: r}
	defer r.Subscribe(after.record)()
	if _, err := r.ForNamespace(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	edited := tenantCM("a", map[string]string{"timeout": "7"})
	objs.set(edited)
	r.Invalidate(edited)
	if err := r.WaitForSubscribers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := after.take(); fmt.Sprint(got) != "[a]" {
		t.Errorf("after the restart: notified %v, want a", got)
	}
	if got := before.take(); len(got) != 0 {
		t.Errorf("the subscription Stop ended was notified of %v", got)
	}
}

// TestTenantChurnIsBounded has a tenant rewrite its ConfigMap 1,000 times
// as fast as it can, on a clock the test steps: the namespace is rebuilt
// at once for the first write and once more, with the last write, when
// the interval ends; another namespace's edit meanwhile applies at once.
func TestTenantChurnIsBounded(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Now())
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r, err := NewFromReader(objs, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	r.c.clock = fc
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ctx := context.Background()
	timeout := func(ns string) int64 {
		s, err := r.ForNamespace(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		return *s.Object.Timeout
	}
	timeout("a")
	timeout("b")
	n := &notes{t: t, r: r}
	t.Cleanup(r.Subscribe(n.record))
	write := func(ns string, i int) {
		cm := tenantCM(ns, map[string]string{"timeout": strconv.Itoa(i)})
		cm.ResourceVersion = strconv.Itoa(i)
		objs.set(cm)
		r.Invalidate(cm)
	}
	write("a", 1)
	if got := n.take(); fmt.Sprint(got) != "[a]" || timeout("a") != 1 {
		t.Fatalf("the first write: notified %v, timeout %d; want a, at once", got, timeout("a"))
	}
	for i := 2; i <= 1000; i++ {
		write("a", i)
	}
	write("b", 5)
	// b is built at once; a waits for the interval's end (the queue
	// holds it on the fake clock, which has not moved).
	deadline := time.Now().Add(10 * time.Second)
	for timeout("b") != 5 {
		if time.Now().After(deadline) {
			t.Fatalf("b's edit not built in 10s: timeout %d", timeout("b"))
		}
		runtime.Gosched()
	}
	if got := timeout("a"); got != 1 {
		t.Errorf("during the interval: timeout %d, want the first write's", got)
	}
	if err := r.st.subs.wait(ctx); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	got := slices.Sorted(slices.Values(n.ns))
	n.ns = nil
	n.mu.Unlock()
	if fmt.Sprint(got) != "[b]" {
		t.Errorf("before the interval ends: notified %v, want b", got)
	}
	fc.Step(tenantRebuildInterval)
	if got := n.take(); fmt.Sprint(got) != "[a]" {
		t.Errorf("once the interval ends: notified %v, want a once", got)
	}
	if got := timeout("a"); got != 1000 {
		t.Errorf("once the interval ends: timeout %d, want the last write's", got)
	}
}

// TestChangeOfAnEvictedNamespaceIsTold changes a namespace while a slow
// subscriber is still on another's change, and evicts it before the
// subscriber gets to it: the change is told all the same.
func TestChangeOfAnEvictedNamespaceIsTold(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"}))
	r, err := NewFromReader(objs, func() Options[*tenantConfig] { o := testOptions(t); o.CacheSize = 2; return o }())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for _, ns := range []string{"a", "b"} {
		if _, err := r.ForNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var told []string
	defer r.Subscribe(func(ns string, _, _ *Snapshot[*tenantConfig]) {
		if ns == "b" {
			close(entered)
			<-release
		}
		mu.Lock()
		told = append(told, ns)
		mu.Unlock()
	})()
	edit := func(ns string, timeout string) {
		cm := tenantCM(ns, map[string]string{"timeout": timeout})
		objs.set(cm)
		r.Invalidate(cm)
	}
	edit("b", "6")
	<-entered
	edit("a", "7")
	if err := r.st.waitSettled(ctx); err != nil { // built, and queued behind b
		t.Fatal(err)
	}
	for _, ns := range []string{"d", "e"} { // a and b evicted
		if _, err := r.ForNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := r.cached("a"); ok {
		t.Fatal("a is still cached")
	}
	close(release)
	if err := r.WaitForSubscribers(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(told) != "[b a]" {
		t.Errorf("told %v, want b, then a's change though a was evicted", told)
	}
}

// TestStartContextEnds ends the context Start was given, without Stop: no
// namespace is built from then on, and WaitForSubscribers does not wait
// for what no worker will build.
func TestStartContextEnds(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r, err := NewFromReader(objs, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if _, err := r.ForNamespace(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	cancel()
	r.st.workers.Wait() // the workers end with the context
	cm := tenantCM("a", map[string]string{"timeout": "7"})
	objs.set(cm)
	r.Invalidate(cm)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := r.WaitForSubscribers(wctx); err != nil {
		t.Errorf("WaitForSubscribers after Start's context ended: %v", err)
	}
	if _, err := r.ForNamespace(context.Background(), "b"); err == nil {
		t.Error("a resolve after Start's context ended built a snapshot")
	}
}

// invalidatingReader is a Reader whose first read of the cluster
// ConfigMap changes it and tells the resolver, as an informer's handler
// does while Start reads.
type invalidatingReader struct {
	*objectReader
	once func()
}

func (r *invalidatingReader) ConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	cm, err := r.objectReader.ConfigMap(ctx, ns, name)
	if f := r.once; f != nil {
		r.once = nil
		f()
	}
	return cm, err
}

// TestClusterChangeDuringStart changes the cluster ConfigMap while Start
// reads it: the change is put in effect, not the version Start read.
func TestClusterChangeDuringStart(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"}))
	reader := &invalidatingReader{objectReader: objs}
	r, err := NewFromReader(reader, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	reader.once = func() {
		cm := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "200"})
		cm.ResourceVersion = "2"
		objs.set(cm)
		r.Invalidate(cm)
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	s, err := r.ForNamespace(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := *s.Object.Timeout; got != 200 {
		t.Errorf("timeout %d, want the 200 of the change made while Start read", got)
	}
}

// TestClusterChangeKeepsNamespaceLayers: a rebuild for a change of the
// cluster ConfigMap reuses the layer made of a namespace's ConfigMap,
// which did not change, instead of parsing it again; a change of the
// namespace's ConfigMap parses the new one.
func TestClusterChangeKeepsNamespaceLayers(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"})
	objs := newObjectReader(cluster, tenantCM("a", map[string]string{"timeout": "5"}))
	r, n := readerResolver(t, objs, nil)
	layerOf := func() *ownLayers {
		var out *ownLayers
		r.st.each(func(ns string, rec *record[*tenantConfig]) {
			if ns == "a" {
				out = rec.layers
			}
		})
		if out == nil || len(out.layers) != 1 || out.layers[0] == nil {
			t.Fatalf("namespace a keeps layers %+v, want its ConfigMap's", out)
		}
		return out
	}
	before := layerOf()

	changed := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100", "retries": "3"})
	changed.ResourceVersion = "2"
	objs.set(changed)
	r.Invalidate(changed)
	if got := n.take(); !slices.Contains(got, "a") {
		t.Fatalf("the cluster change notified %v", got)
	}
	after := layerOf()
	if after.cms[0] != before.cms[0] || reflect.ValueOf(after.layers[0].Values).Pointer() != reflect.ValueOf(before.layers[0].Values).Pointer() {
		t.Error("the cluster change parsed namespace a's ConfigMap again")
	}
	if s, _ := r.ForNamespace(context.Background(), "a"); *s.Object.Timeout != 5 || *s.Object.Retries != 3 {
		t.Errorf("after the cluster change: timeout %d, retries %d; want 5 and 3", *s.Object.Timeout, *s.Object.Retries)
	}

	edited := tenantCM("a", map[string]string{"timeout": "7"})
	edited.ResourceVersion = "2"
	objs.set(edited)
	r.Invalidate(edited)
	n.take()
	kept := layerOf()
	if kept.cms[0] != edited || kept.layers[0].Values["/timeout"] != "7" {
		t.Errorf("after the namespace's edit it keeps %+v", kept.layers[0].Values)
	}

	// The gate closed and opened again: the layer is not parsed again,
	// and applies again.
	timeout := func() int64 {
		s, err := r.ForNamespace(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		return *s.Object.Timeout
	}
	for i, gate := range []string{"off", "on"} {
		cm := configMap("ops", "config", nil, map[string]string{"tenancy": gate, "timeout": "100"})
		cm.ResourceVersion = strconv.Itoa(3 + i)
		objs.set(cm)
		r.Invalidate(cm)
		n.take()
		if want := map[string]int64{"off": 100, "on": 7}[gate]; timeout() != want {
			t.Errorf("gate %s: timeout %d, want %d", gate, timeout(), want)
		}
	}
	if got := layerOf(); reflect.ValueOf(got.layers[0].Values).Pointer() != reflect.ValueOf(kept.layers[0].Values).Pointer() {
		t.Error("the gate's closing and opening parsed namespace a's ConfigMap again")
	}
}

// meetingReader is an objectReader whose list of a tenant namespace's
// ConfigMaps, once armed, waits until two of them are under way at once
// (or wait has passed) and records how many were.
type meetingReader struct {
	*objectReader
	armed    atomic.Bool
	wait     time.Duration
	mu       sync.Mutex
	in, most int
	met      chan struct{}
	meetOnce sync.Once
	late     atomic.Int32
}

func (m *meetingReader) ConfigMaps(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	if m.armed.Load() && namespace != "ops" {
		m.mu.Lock()
		m.in++
		m.most = max(m.most, m.in)
		if m.in == 2 {
			m.meetOnce.Do(func() { close(m.met) })
		}
		m.mu.Unlock()
		select {
		case <-m.met:
		case <-time.After(m.wait):
			m.late.Add(1)
		}
		m.mu.Lock()
		m.in--
		m.mu.Unlock()
	}
	return m.objectReader.ConfigMaps(ctx, namespace, sel)
}

// TestClusterChangeBuildsNamespacesAtOnce: after a change of the cluster
// ConfigMap, namespaces are read and built two at once, not one after
// another, and each is built with the change.
func TestClusterChangeBuildsNamespacesAtOnce(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"})
	m := &meetingReader{objectReader: newObjectReader(cluster), wait: 5 * time.Second, met: make(chan struct{})}
	r, err := NewFromReader(m, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	names := []string{"a", "b", "c", "d", "e", "f"}
	for _, ns := range names {
		m.set(tenantCM(ns, map[string]string{"timeout": "5"}))
		if _, err := r.ForNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	m.armed.Store(true)
	changed := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100", "retries": "4"})
	changed.ResourceVersion = "2"
	m.set(changed)
	r.Invalidate(changed)
	if err := r.WaitForSubscribers(ctx); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	most := m.most
	m.mu.Unlock()
	if most < 2 || m.late.Load() > 1 {
		t.Errorf("at most %d namespaces were built at once, %d waited %v for another; want 2 at once", most, m.late.Load(), m.wait)
	}
	for _, ns := range names {
		if s, _ := r.ForNamespace(ctx, ns); *s.Object.Retries != 4 || *s.Object.Timeout != 5 {
			t.Errorf("namespace %s: retries %d, timeout %d; want 4 and 5", ns, *s.Object.Retries, *s.Object.Timeout)
		}
	}
}

// TestSameOverridesShareTheirObject: namespaces whose own ConfigMaps set
// the same keys to the same values get one object, all but the first
// built (the doorkeeper keeps a configuration built twice), while each
// snapshot names its own ConfigMap; other values get another object, and
// a change of the cluster ConfigMap builds new ones, shared again.
func TestSameOverridesShareTheirObject(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"})
	same := map[string]string{"timeout": "5", "verbose": "false"}
	sameNS := []string{"a", "b", "d", "e"}
	objs := newObjectReader(cluster, tenantCM("c", map[string]string{"timeout": "6", "verbose": "false"}))
	for _, ns := range sameNS {
		objs.set(tenantCM(ns, same))
	}
	r, n := readerResolver(t, objs, nil)
	ctx := context.Background()
	snaps := func() map[string]*Snapshot[*tenantConfig] {
		out := map[string]*Snapshot[*tenantConfig]{}
		for _, ns := range append([]string{"c"}, sameNS...) {
			s, err := r.ForNamespace(ctx, ns)
			if err != nil {
				t.Fatal(err)
			}
			out[ns] = s
		}
		return out
	}
	check := func(when string, retries int32) map[*tenantConfig]int { // 0: none set
		t.Helper()
		s := snaps()
		objects := map[*tenantConfig]int{} // of the namespaces with the same overrides
		for _, ns := range sameNS {
			objects[s[ns].Object]++
			if s[ns].Object == s["c"].Object || *s[ns].Object.Timeout != 5 {
				t.Errorf("%s: namespace %s's timeout %d; want 5, in another object than c's", when, ns, *s[ns].Object.Timeout)
			}
			if got := s[ns].Object.Retries; (got == nil) != (retries == 0) || got != nil && *got != retries {
				t.Errorf("%s: namespace %s's retries %v, want %d", when, ns, got, retries)
			}
			src, _ := s[ns].Provenance().SourceOf("/timeout")
			if want := ns + "/overrides"; src.Name != want || !slices.ContainsFunc(s[ns].Sources(), func(x merge.Source) bool { return x.Name == want }) {
				t.Errorf("%s: namespace %s's timeout from %v, sources %v; want its own ConfigMap %s", when, ns, src, s[ns].Sources(), want)
			}
		}
		if most := slices.Max(slices.Collect(maps.Values(objects))); most < len(sameNS)-1 {
			t.Errorf("%s: %d objects for %d namespaces with the same overrides, the most shared by %d; want all but the first built to share one", when, len(objects), len(sameNS), most)
		}
		if *s["c"].Object.Timeout != 6 {
			t.Errorf("%s: namespace c's timeout %d, want 6", when, *s["c"].Object.Timeout)
		}
		return objects
	}
	before := check("at first", 0)

	changed := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100", "retries": "3"})
	changed.ResourceVersion = "2"
	objs.set(changed)
	r.Invalidate(changed)
	n.take()
	for obj := range check("after a cluster change", 3) {
		if before[obj] > 0 {
			t.Error("the cluster change kept an object built before it")
		}
	}
}
