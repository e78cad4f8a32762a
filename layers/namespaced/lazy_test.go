package namespaced_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
)

// scripted is client-go's fake clientset with the lists of namespace
// "team" and the shared (cluster-wide) ConfigMap watches scripted by a
// test, resourceVersions as a real server gives them. (The fake holds a
// lock while a reactor runs; a list that waits must not.)
type scripted struct {
	*fake.Clientset
	mu      sync.Mutex
	lists   []func() (*corev1.ConfigMapList, error) // the next lists of "team", in turn; the last repeats
	listed  chan int                                // the number of each list of "team", as it begins
	n       int
	nowRV   string                  // the version of now, for the watch to start from
	watches chan *watch.FakeWatcher // each shared watch
	calls   atomic.Int32            // shared watches asked for
	failing atomic.Bool             // lists of namespaces named bad-* fail
}

func newScripted(rv string) *scripted {
	return &scripted{
		Clientset: fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"},
			Data: map[string]string{"enforced-config-level": "namespace"}}),
		listed: make(chan int, 64), nowRV: rv, watches: make(chan *watch.FakeWatcher, 64),
	}
}

func (s *scripted) CoreV1() typedcorev1.CoreV1Interface {
	return scriptedCore{s.Clientset.CoreV1(), s}
}

type scriptedCore struct {
	typedcorev1.CoreV1Interface
	s *scripted
}

func (c scriptedCore) ConfigMaps(ns string) typedcorev1.ConfigMapInterface {
	return scriptedConfigMaps{c.CoreV1Interface.ConfigMaps(ns), ns, c.s}
}

type scriptedConfigMaps struct {
	typedcorev1.ConfigMapInterface
	ns string
	s  *scripted
}

func (c scriptedConfigMaps) List(ctx context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
	s := c.s
	switch c.ns {
	case "":
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: s.nowRV}}, nil
	case "team":
		s.mu.Lock()
		next := s.lists[0]
		if len(s.lists) > 1 {
			s.lists = s.lists[1:]
		}
		s.n++
		s.listed <- s.n
		s.mu.Unlock()
		return next()
	}
	if strings.HasPrefix(c.ns, "bad-") && s.failing.Load() {
		return nil, apierrors.NewTimeoutError("request timed out", 1)
	}
	return c.ConfigMapInterface.List(ctx, o)
}

func (c scriptedConfigMaps) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if c.ns != "" {
		return c.ConfigMapInterface.Watch(ctx, o)
	}
	c.s.calls.Add(1)
	w := watch.NewFakeWithChanSize(4, false)
	c.s.watches <- w
	return w, nil
}

// overrides returns a list of "team" at rv whose override sets the
// timeout.
func overrides(rv string, timeout int) func() (*corev1.ConfigMapList, error) {
	return func() (*corev1.ConfigMapList, error) {
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: []corev1.ConfigMap{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels, ResourceVersion: rv},
			Data:       map[string]string{"default-timeout-seconds": fmt.Sprint(timeout)},
		}}}, nil
	}
}

// blocked returns list once release is closed.
func blocked(release <-chan struct{}, list func() (*corev1.ConfigMapList, error)) func() (*corev1.ConfigMapList, error) {
	return func() (*corev1.ConfigMapList, error) {
		<-release
		return list()
	}
}

func (s *scripted) script(lists ...func() (*corev1.ConfigMapList, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = lists
}

func (s *scripted) lazy(t *testing.T) *namespaced.Resolver[*jobDefaults] {
	return s.lazyWith(t, nil, nil)
}

// lazyWith starts a Lazy resolver over s with the options set changes,
// after hook.
func (s *scripted) lazyWith(t *testing.T, set func(*namespaced.Options[*jobDefaults]), hook func(*namespaced.Resolver[*jobDefaults])) *namespaced.Resolver[*jobDefaults] {
	t.Helper()
	o := fakeOptions(t)
	if set != nil {
		set(&o)
	}
	r, err := namespaced.NewLazy(s, o)
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(r)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func expired(w *watch.FakeWatcher) {
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
}

func eventually(t *testing.T, r *namespaced.Resolver[*jobDefaults], want int64, why string) {
	t.Helper()
	if !watchtest.Until(5*time.Second, func() bool { return timeoutOf(t, r, "team") == want }) {
		t.Fatalf("%s: timeout %d after 5s, want %d", why, timeoutOf(t, r, "team"), want)
	}
}

// TestWatchRestartsDuringFirstList expires the shared watch while a
// namespace's first list is under way: that list may predate changes the
// new watch, started from now, never delivers, so the namespace is listed
// again at once, beside it; the first list, older, ends last and changes
// nothing.
func TestWatchRestartsDuringFirstList(t *testing.T) {
	s := newScripted("300")
	release := make(chan struct{})
	s.script(blocked(release, overrides("100", 5)), overrides("400", 9))
	relisted := make(chan string, 4)
	r := s.lazyWith(t, nil, func(r *namespaced.Resolver[*jobDefaults]) {
		namespaced.OnRelist(r, func(_, rv string) { relisted <- rv })
	})
	first := <-s.watches
	got := resolveLater(t, r, "team")
	<-s.listed // the miss lists, and waits
	expired(first)
	if rv := <-relisted; rv != "400" {
		t.Fatalf("relisted at %s, want 400", rv)
	}
	close(release)
	if v := <-got; v != 9 {
		t.Fatalf("the resolve gave timeout %d, want the relist's 9", v)
	}
	eventually(t, r, 9, "the change made while the first list was under way")
}

// TestRelistsOfANamespaceTakeTurns expires the shared watch twice while
// the first relist of a namespace hangs: the work queue never lists one
// namespace twice at once, so the second relist starts only once the
// first ended, and the namespace ends with what the newer list gave.
func TestRelistsOfANamespaceTakeTurns(t *testing.T) {
	s := newScripted("300")
	release := make(chan struct{})
	s.script(overrides("100", 5), blocked(release, overrides("150", 6)), overrides("200", 9))
	relisted := make(chan string, 4)
	r := s.lazyWith(t, nil, func(r *namespaced.Resolver[*jobDefaults]) {
		namespaced.OnRelist(r, func(_, rv string) { relisted <- rv })
	})
	w := <-s.watches
	if v := timeoutOf(t, r, "team"); v != 5 {
		t.Fatalf("timeout %d, want 5", v)
	}
	<-s.listed
	expired(w)
	<-s.listed // the relist that will give 150, waiting
	w = <-s.watches
	expired(w)
	<-s.watches // started again: a second relist is owed
	close(release)
	if first, second := <-relisted, <-relisted; first != "150" || second != "200" {
		t.Fatalf("relists ended at %s, then %s; want 150, then 200", first, second)
	}
	eventually(t, r, 9, "the second relist")
}

// TestWatchEndingAtOnceBacksOff has the server end every shared watch as
// soon as it starts (it refuses the watch, as without RBAC for it): the
// resolver starts again after a pause that doubles, up to 30 s, on a clock
// the test steps; no watch starts before its pause is over.
func TestWatchEndingAtOnceBacksOff(t *testing.T) {
	fc := timerClock{testingclock.NewFakeClock(time.Now()), make(chan time.Duration)}
	s := newScripted("")
	s.script(overrides("", 5))
	s.lazyWith(t, nil, func(r *namespaced.Resolver[*jobDefaults]) { namespaced.WithClock(r, fc) })
	forbidden := &metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: "forbidden"}
	for i, pause := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 12800 * time.Millisecond, 25600 * time.Millisecond, 30 * time.Second, 30 * time.Second} {
		w := <-s.watches
		w.Error(forbidden)
		// The resolver now waits on a timer of the clock.
		if d := <-fc.timers; d != pause {
			t.Fatalf("watch %d: a pause of %v after it ended, want %v", i+1, d, pause)
		}
		fc.Step(pause - time.Millisecond)
		select {
		case <-s.watches:
			t.Fatalf("watch %d: another started before %v", i+1, pause)
		default:
		}
		fc.Step(time.Millisecond)
	}
}

// timerClock is a fake clock that tells of each timer made, once it is
// set: the relist queue's ticker waits on the clock too, so HasWaiters
// cannot tell the resolver's pause apart.
type timerClock struct {
	*testingclock.FakeClock
	timers chan time.Duration
}

func (c timerClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.timers <- d
	return t
}

// TestSubscriberResolves resolves 100 namespaces not cached from inside a
// subscriber, which the shared watch's goroutine runs: none of them waits
// for that goroutine.
func TestSubscriberResolves(t *testing.T) {
	s := newScripted("")
	s.script(overrides("", 5))
	r := s.lazy(t)
	if v := timeoutOf(t, r, "team"); v != 5 {
		t.Fatalf("timeout %d", v)
	}
	done := make(chan error, 1)
	var once sync.Once
	r.Subscribe(func(string, *namespaced.Snapshot[*jobDefaults], *namespaced.Snapshot[*jobDefaults]) {
		once.Do(func() {
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			for i := range 100 {
				wg.Go(func() {
					if _, err := r.ForNamespace(context.Background(), fmt.Sprintf("ns-%d", i)); err != nil {
						errs <- err
					}
				})
			}
			finished := make(chan struct{})
			go func() { wg.Wait(); close(finished) }()
			select {
			case <-finished:
				close(errs)
				done <- <-errs
			case <-time.After(10 * time.Second):
				done <- fmt.Errorf("100 resolves from a subscriber not done in 10s")
			}
		})
	})
	w := <-s.watches
	w.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels},
		Data: map[string]string{"default-timeout-seconds": "7"}})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the subscriber never ran")
	}
}

// TestLazyStartedAgain stops a Lazy resolver, changes a namespace it kept
// cached, invalidates a namespace ConfigMap while it is stopped, and
// starts it again: the cached namespace is listed again, and
// WaitForSubscribers does not wait for a list of the invalidated one,
// which a stopped resolver does not make (it waited for ever).
func TestLazyStartedAgain(t *testing.T) {
	s := newScripted("")
	s.script(overrides("", 5))
	r := s.lazy(t)
	if v := timeoutOf(t, r, "team"); v != 5 {
		t.Fatalf("timeout %d", v)
	}
	r.Stop()
	s.script(overrides("", 9))
	r.Invalidate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "overrides", Labels: tenantLabels}})
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, r, 9, "the change made while the resolver was stopped")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.WaitForSubscribers(ctx); err != nil {
		t.Fatalf("WaitForSubscribers after a start: %v", err)
	}
}

// blockingReader is a Reader over ConfigMaps the test holds whose first
// list of namespace "team" waits for release.
type blockingReader struct {
	mu      sync.Mutex
	cms     map[string]*corev1.ConfigMap // by namespace/name
	first   bool
	entered chan struct{}
	release chan struct{}
}

func (b *blockingReader) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cms[ns+"/"+name], nil
}

func (b *blockingReader) ConfigMaps(_ context.Context, ns string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	b.mu.Lock()
	var out []*corev1.ConfigMap
	for _, cm := range b.cms {
		if cm.Namespace == ns && sel.Matches(labels.Set(cm.Labels)) {
			out = append(out, cm)
		}
	}
	wait := ns == "team" && !b.first
	b.first = b.first || wait
	b.mu.Unlock()
	if wait {
		close(b.entered)
		<-b.release
	}
	return out, nil
}

func (b *blockingReader) NamespaceLabels(context.Context, string) (map[string]string, error) {
	return nil, nil
}

func (b *blockingReader) set(cm *corev1.ConfigMap) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cms[cm.Namespace+"/"+cm.Name] = cm
}

// TestChangeDuringMiss changes a namespace's ConfigMap while its first
// resolve reads it, and tells the resolver, which finds nothing cached to
// update: the resolve reads again rather than cache what it read before.
func TestChangeDuringMiss(t *testing.T) {
	overrides := func(rv string, timeout int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels, ResourceVersion: rv},
			Data: map[string]string{"default-timeout-seconds": fmt.Sprint(timeout)}}
	}
	b := &blockingReader{entered: make(chan struct{}), release: make(chan struct{}), cms: map[string]*corev1.ConfigMap{
		"ops/defaults": {ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults", ResourceVersion: "1"},
			Data: map[string]string{"enforced-config-level": "namespace"}},
		"team/overrides": overrides("2", 5),
	}}
	r, err := namespaced.NewFromReader(b, fakeOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	got := resolveLater(t, r, "team")
	<-b.entered
	changed := overrides("3", 9)
	b.set(changed)
	r.Invalidate(changed)
	close(b.release)
	if v := <-got; v != 9 {
		t.Errorf("the resolve read before the change and cached timeout %d, want 9", v)
	}
	if v := timeoutOf(t, r, "team"); v != 9 {
		t.Errorf("cached timeout %d, want 9", v)
	}
}

// resolveLater resolves namespace ns of r in a goroutine and sends its
// timeout (-1 on an error).
func resolveLater(t *testing.T, r *namespaced.Resolver[*jobDefaults], ns string) <-chan int64 {
	got := make(chan int64, 1)
	go func() {
		s, err := r.ForNamespace(t.Context(), ns)
		if err != nil {
			got <- -1
			return
		}
		got <- *s.Object.DefaultTimeoutSeconds
	}()
	return got
}

// TestWatchRestartsDuringTwoFirstLists has two first resolves of one
// namespace list it while the shared watch starts again from now: the
// relist ends first, and neither older list undoes it, though the
// namespace is evicted before the second ends.
func TestWatchRestartsDuringTwoFirstLists(t *testing.T) {
	s := newScripted("300")
	rel1, rel2 := make(chan struct{}), make(chan struct{})
	s.script(blocked(rel1, overrides("100", 5)), blocked(rel2, overrides("110", 5)), overrides("400", 9))
	relisted := make(chan string, 4)
	r := s.lazyWith(t, func(o *namespaced.Options[*jobDefaults]) { o.CacheSize = 1 }, func(r *namespaced.Resolver[*jobDefaults]) {
		namespaced.OnRelist(r, func(_, rv string) { relisted <- rv })
	})
	first := <-s.watches
	got1 := resolveLater(t, r, "team")
	<-s.listed
	got2 := resolveLater(t, r, "team")
	<-s.listed
	expired(first)
	if rv := <-relisted; rv != "400" {
		t.Fatalf("relisted at %s, want 400", rv)
	}
	close(rel1)
	if v := <-got1; v != 9 {
		t.Fatalf("the first resolve gave timeout %d, want the relist's 9", v)
	}
	if _, err := r.ForNamespace(t.Context(), "other"); err != nil { // evicts team
		t.Fatal(err)
	}
	close(rel2)
	if v := <-got2; v != 9 {
		t.Fatalf("the second resolve gave timeout %d, want the relist's 9", v)
	}
	eventually(t, r, 9, "the namespace cached again")
}

// TestLazyStartedAgainDuringMiss stops and starts a Lazy resolver while a
// first resolve lists a namespace: the namespace it caches is listed
// again, since its list may predate changes made while it was stopped,
// and the shared watch then updates it.
func TestLazyStartedAgainDuringMiss(t *testing.T) {
	s := newScripted("")
	release := make(chan struct{})
	s.script(blocked(release, overrides("100", 5)), overrides("200", 9))
	r := s.lazy(t)
	<-s.watches
	got := resolveLater(t, r, "team")
	<-s.listed
	r.Stop()
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := <-s.watches
	close(release)
	if v := <-got; v != 5 && v != 9 {
		t.Fatalf("the resolve gave timeout %d, want its list's 5 or the relist's 9", v)
	}
	eventually(t, r, 9, "the namespace cached across the restart, listed again")
	w.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels},
		Data: map[string]string{"default-timeout-seconds": "11"}})
	eventually(t, r, 11, "a change through the shared watch after the restart")
}

// TestLazyLabelChangeDuringMiss changes a namespace's labels while its
// first resolve lists its ConfigMaps: the snapshot it returns is built
// from the new labels, and a selector layer they match applies.
func TestLazyLabelChangeDuringMiss(t *testing.T) {
	s := newScripted("")
	ctx := t.Context()
	if _, err := s.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team",
		Labels: map[string]string{"tier": "bronze"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Clientset.CoreV1().ConfigMaps("ops").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "gold",
		Labels:      map[string]string{"layer": "selector"},
		Annotations: map[string]string{namespaced.DefaultSelectorAnnotation: "tier=gold"}},
		Data: map[string]string{"default-timeout-seconds": "30"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	none := func() (*corev1.ConfigMapList, error) { return &corev1.ConfigMapList{}, nil }
	s.script(blocked(release, none), none)
	r := s.lazyWith(t, func(o *namespaced.Options[*jobDefaults]) {
		o.Selectors = &namespaced.Selectors{Labels: map[string]string{"layer": "selector"}}
	}, nil)
	got := resolveLater(t, r, "team")
	<-s.listed
	if _, err := s.Clientset.CoreV1().Namespaces().Update(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team",
		Labels: map[string]string{"tier": "gold"}}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return namespaced.NamespaceLabels(r, "team")["tier"] == "gold", nil
	}); err != nil {
		t.Fatalf("the resolver's namespace informer never saw the new labels: %v", err)
	}
	close(release)
	if v := <-got; v != 30 {
		t.Errorf("the resolve cached the labels it read before the change: timeout %d, want the gold selector layer's 30", v)
	}
}

// TestFailingRelistsHoldUpNoOther expires the shared watch while the lists
// of 100 namespaces keep failing: the namespace whose list works is listed
// again all the same (the workers do not wait on the failing ones).
func TestFailingRelistsHoldUpNoOther(t *testing.T) {
	s := newScripted("300")
	s.script(overrides("100", 5), overrides("400", 9))
	r := s.lazy(t)
	w := <-s.watches
	if v := timeoutOf(t, r, "team"); v != 5 {
		t.Fatalf("timeout %d", v)
	}
	for i := range 100 {
		if _, err := r.ForNamespace(t.Context(), fmt.Sprintf("bad-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	s.failing.Store(true)
	expired(w)
	eventually(t, r, 9, "the namespace listed again beside 100 whose lists fail")
}

// TestVersionsWentBack restores the server to an older revision, as a
// restore of etcd from a snapshot does: the shared watch is refused with
// "too large resource version"; the resolver starts it again from now
// and lists the cached namespace again, and takes what the server holds
// though its version is older than the one it had.
func TestVersionsWentBack(t *testing.T) {
	s := newScripted("300")
	s.script(overrides("400", 9), overrides("120", 3))
	r := s.lazy(t)
	w := <-s.watches
	if v := timeoutOf(t, r, "team"); v != 9 {
		t.Fatalf("timeout %d, want 9", v)
	}
	<-s.listed
	tooLarge := apierrors.NewTimeoutError("Too large resource version: 401, current: 150", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	w.Error(&tooLarge.ErrStatus)
	<-s.watches // started again from now
	eventually(t, r, 3, "the namespace as the restored server holds it")
}

// TestGateOpensWithNothingToRead keeps a namespace's own ConfigMaps while
// the gate is closed: when it opens, they apply at once, with no list
// (every list now fails), and they stay across a restart whose relists
// fail.
func TestGateOpensWithNothingToRead(t *testing.T) {
	s := newScripted("")
	cluster := func(level, timeout string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"},
			Data: map[string]string{"enforced-config-level": level, "default-timeout-seconds": timeout}}
		if _, err := s.Clientset.CoreV1().ConfigMaps("ops").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cluster("cluster", "100")
	s.script(overrides("", 5))
	r := s.lazy(t)
	if v := timeoutOf(t, r, "team"); v != 100 {
		t.Fatalf("gate closed: timeout %d, want 100", v)
	}
	<-s.listed // the first resolve's
	s.script(func() (*corev1.ConfigMapList, error) { return nil, apierrors.NewTimeoutError("request timed out", 1) })
	cluster("namespace", "200")
	eventually(t, r, 5, "the gate opened")
	select {
	case n := <-s.listed:
		t.Fatalf("the gate's opening listed the namespace (list %d)", n)
	default:
	}
	r.Stop()
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.listed // the restart's relist, failing
	if v := timeoutOf(t, r, "team"); v != 5 {
		t.Fatalf("started again, relist failing: timeout %d, want the 5 held", v)
	}
}

// TestWaitForSubscribersWaitsForARelist invalidates a namespace ConfigMap
// of a Lazy resolver, which lists the namespace again: WaitForSubscribers
// waits for that list and the build after it.
func TestWaitForSubscribersWaitsForARelist(t *testing.T) {
	s := newScripted("300")
	release := make(chan struct{})
	s.script(overrides("100", 5), blocked(release, overrides("400", 9)))
	r := s.lazy(t)
	<-s.watches
	if v := timeoutOf(t, r, "team"); v != 5 {
		t.Fatalf("timeout %d, want 5", v)
	}
	<-s.listed
	r.Invalidate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels}})
	<-s.listed // the relist, waiting
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.WaitForSubscribers(ctx); err == nil {
		t.Fatal("WaitForSubscribers returned while the relist was under way")
	}
	close(release)
	if err := r.WaitForSubscribers(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := timeoutOf(t, r, "team"); v != 9 {
		t.Errorf("timeout %d after WaitForSubscribers, want the relist's 9", v)
	}
}

// TestStartedAgainAfterVersionsWentBack: a Lazy resolver is stopped
// (leadership lost), etcd is restored from an older snapshot, and the
// resolver is started again: nothing of the new run's watch says the
// versions went back, so the restart forgets the versions its records
// hold, and the relist of the cached namespace, at the restored
// server's lower version, is taken rather than dropped as older.
func TestStartedAgainAfterVersionsWentBack(t *testing.T) {
	s := newScripted("300")
	s.script(overrides("400", 9))
	r := s.lazy(t)
	<-s.watches
	if v := timeoutOf(t, r, "team"); v != 9 {
		t.Fatalf("timeout %d, want 9", v)
	}
	<-s.listed
	r.Stop()
	s.nowRV = "150" // restored: the tenant's ConfigMap is as it was at 120
	s.script(overrides("120", 3))
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.watches
	<-s.listed
	eventually(t, r, 3, "the namespace as the restored server holds it, after a restart")
}
