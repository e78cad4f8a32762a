package namespaced

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// lazyMode reads a namespace's ConfigMaps on its first resolve, with one
// request scoped to it, and then follows them while the namespace stays
// cached through one watch that all cached namespaces share: a watch of
// the ConfigMaps that carry the required labels, cluster-wide, whose
// events for namespaces not cached are dropped. A cached namespace costs
// no goroutine and no watch of its own. The cluster ConfigMap, and with
// selector layers the selector ConfigMaps and the namespaces, come from
// informers.
//
// Events and lists meet by resourceVersion (comparable since Kubernetes
// 1.34, KEP-5504): an event applies to a namespace only when it is newer
// than what the namespace's list or last event gave, and events that come
// while the namespace is being listed wait for the list. A watch that
// breaks resumes from the last version seen, across API server restarts;
// one whose version expired (410 Gone) starts again from now, and every
// followed namespace is listed again, so that no change is lost.
type lazyMode[T runtime.Object] struct {
	c      *core[T]
	st     *state[T]
	client kubernetes.Interface
	inf    *informerSet
	ctx    context.Context
	cancel context.CancelFunc
	stopEv func()
	wg     sync.WaitGroup // the shared watch and the relist workers

	mu       sync.Mutex
	followed map[string]*follow[T] // by namespace
	flushes  chan string           // namespaces whose list ended, for the dispatcher
	relists  chan relist[T]        // namespaces to list again
}

// follow is how the shared watch follows one namespace.
type follow[T runtime.Object] struct {
	e  *entry[T] // the cached entry events update; nil until it is cached
	rv string    // what e holds is at least this version ("": unknown)
	// listing counts the lists of the namespace under way; while any is,
	// its events wait in buffer, to apply in order once the list did.
	listing int
	buffer  []watch.Event
}

// relist is a namespace to list again, and the entry its list is for.
type relist[T runtime.Object] struct {
	ns string
	e  *entry[T]
}

// relistWorkers bounds the lists of namespaces under way at once after the
// shared watch expired, or when the gate opens.
const relistWorkers = 4

func newLazy[T runtime.Object](c *core[T], st *state[T], client kubernetes.Interface) *lazyMode[T] {
	m := &lazyMode[T]{c: c, st: st, client: client, stopEv: func() {},
		followed: map[string]*follow[T]{}, flushes: make(chan string, 64), relists: make(chan relist[T], 64)}
	st.g.watch = m.follow
	return m
}

func (m *lazyMode[T]) start(ctx context.Context) error {
	if m.client == nil {
		return fmt.Errorf("namespaced: a Lazy resolver needs a client")
	}
	m.ctx, m.cancel = context.WithCancel(ctx)
	events := newEventSink(&m.c.o)
	var err error
	if events == nil {
		if events, m.stopEv, err = startEvents(m.ctx, m.client, m.c.eventController()); err != nil {
			m.stop()
			return err
		}
	}
	if m.inf, err = startInformers(m.ctx, m.client, m.c, false); err != nil {
		m.stop()
		return err
	}
	rv, err := m.currentVersion(m.ctx)
	if err != nil {
		m.stop()
		return fmt.Errorf("namespaced: starting the ConfigMap watch: %w", err)
	}
	m.wg.Add(1 + relistWorkers)
	go m.dispatch(rv)
	for range relistWorkers {
		go m.relistWorker()
	}
	if err := m.st.begin(m.ctx, m.inf, events); err != nil {
		m.stop()
		return err
	}
	if err := m.inf.handle(m.changed); err != nil {
		m.stop()
		return err
	}
	return nil
}

func (m *lazyMode[T]) stop() {
	if m.cancel != nil {
		m.cancel()
	}
	m.inf.shutdown()
	m.wg.Wait()
	m.stopEv()
}

// changed applies a change the informers saw: the cluster ConfigMap, a
// selector ConfigMap, or a namespace's labels.
func (m *lazyMode[T]) changed(obj any) {
	switch o := deletedObject(obj).(type) {
	case *corev1.ConfigMap:
		if m.c.isCluster(o) {
			cm, err := m.inf.cluster(m.ctx)
			if err != nil {
				m.c.log.Error(err, "Reading the cluster ConfigMap failed")
				return
			}
			m.st.applyCluster(cm)
			return
		}
		cms, _ := m.inf.selectors(m.ctx)
		m.st.applySelectors(cms)
	case *corev1.Namespace:
		e := m.st.cache.get(o.Name)
		if e == nil {
			return
		}
		ls, _ := m.inf.labels(m.ctx, o.Name)
		m.st.do(func(g *guarded[T]) { g.setInputs(o.Name, e, e.cms, ls) })
	}
}

func (m *lazyMode[T]) miss(ctx context.Context, ns string) (*Snapshot[T], error) {
	listed := false
	defer func() {
		if listed {
			m.endList(ns)
		}
	}()
	return m.st.miss(ctx, ns, func(ctx context.Context, ns string, cl *clusterState[T]) (nsInput, error) {
		var in nsInput
		ls, err := m.inf.labels(ctx, ns)
		if err != nil {
			return in, fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		in.labels = ls
		if !cl.policy.open || m.c.system(ns) {
			return in, nil
		}
		if !listed {
			m.beginList(ns) // events from now wait for this list
			listed = true
		}
		list, err := m.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: m.c.nsLabels.String()})
		if err != nil {
			return in, fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
		}
		in.cms, in.watch, in.rv = slimAll(m.c.ownConfigMaps(pointers(list.Items))), true, list.ResourceVersion
		return in, nil
	})
}

// beginList makes the events of ns wait until endList.
func (m *lazyMode[T]) beginList(ns string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.followed[ns]
	if f == nil {
		f = &follow[T]{}
		m.followed[ns] = f
	}
	f.listing++
}

// endList hands ns to the dispatcher, which applies the events that
// waited, in order, before any newer one.
func (m *lazyMode[T]) endList(ns string) {
	select {
	case m.flushes <- ns:
	case <-m.ctx.Done():
	}
}

// follow makes the shared watch update e, the entry of ns just cached
// (or whose gate just opened), from rv. guarded calls it with the state
// lock held. With rv empty the namespace is listed first, by a worker.
// The returned function stops following it.
func (m *lazyMode[T]) follow(ns string, e *entry[T], rv string) context.CancelFunc {
	m.mu.Lock()
	f := m.followed[ns]
	if f == nil {
		f = &follow[T]{}
		m.followed[ns] = f
	}
	if f.e == nil {
		m.c.m.watches.Inc()
	}
	f.e, f.rv = e, rv
	if rv == "" {
		f.listing++ // the worker's list, ended by endList
	}
	m.mu.Unlock()
	if rv == "" {
		go func() {
			select {
			case m.relists <- relist[T]{ns: ns, e: e}:
			case <-m.ctx.Done():
			}
		}()
	}
	return func() { m.unfollow(ns, e) }
}

// unfollow stops following ns for e (evicted, or the gate closed).
func (m *lazyMode[T]) unfollow(ns string, e *entry[T]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.followed[ns]
	if f == nil || f.e != e {
		return
	}
	f.e, f.rv, f.buffer = nil, "", nil
	m.c.m.watches.Dec()
	if f.listing == 0 {
		delete(m.followed, ns)
	}
}

// currentVersion returns the resourceVersion of now for the shared watch,
// at the cost of one object: a list of at most one ConfigMap.
func (m *lazyMode[T]) currentVersion(ctx context.Context) (string, error) {
	list, err := m.client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: m.c.nsLabels.String(), Limit: 1})
	if err != nil {
		return "", err
	}
	return list.ResourceVersion, nil
}

// dispatch runs the shared watch and applies what it sees, one event at
// a time, and the events that waited for a list when the list ends. It
// ends with the resolver.
func (m *lazyMode[T]) dispatch(rv string) {
	defer m.wg.Done()
	sel := m.c.nsLabels.String()
	cms := m.client.CoreV1().ConfigMaps("")
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = sel
		return cms.Watch(ctx, o)
	}}
	delay := 100 * time.Millisecond
	for m.ctx.Err() == nil {
		var w watch.Interface
		var err error
		if rv == "" {
			// No resourceVersion to resume from (client-go's fake
			// clientset gives none): a plain watch.
			w, err = cms.Watch(m.ctx, metav1.ListOptions{LabelSelector: sel})
		} else {
			w, err = watchtools.NewRetryWatcherWithContext(m.ctx, rv, lw)
		}
		if err != nil {
			m.c.log.V(2).Info("Starting the ConfigMap watch failed; retrying", "err", err, "after", delay)
			if !m.sleep(delay) {
				return
			}
			delay = min(2*delay, 30*time.Second)
			continue
		}
		delay = 100 * time.Millisecond
		m.drain(w)
		w.Stop()
		if m.ctx.Err() != nil {
			return
		}
		// The watch ended for good (its version expired): start again
		// from now, and list every followed namespace again.
		if rv, err = m.currentVersion(m.ctx); err != nil {
			rv = ""
		}
		m.relistAll()
	}
}

// drain applies w's events and the flushes until w ends.
func (m *lazyMode[T]) drain(w watch.Interface) {
	for {
		select {
		case <-m.ctx.Done():
			return
		case ns := <-m.flushes:
			m.flush(ns)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev.Type == watch.Error {
				m.c.log.V(2).Info("The ConfigMap watch ended; starting again from now", "status", apierrors.FromObject(ev.Object))
				return
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && (ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted) {
				m.event(ev, cm)
			}
		}
	}
}

// event applies one event to the namespace it is of, if followed: at
// once, or after the list under way.
func (m *lazyMode[T]) event(ev watch.Event, cm *corev1.ConfigMap) {
	m.mu.Lock()
	f := m.followed[cm.Namespace]
	switch {
	case f == nil:
		m.mu.Unlock()
		return // a namespace not cached
	case f.listing > 0:
		f.buffer = append(f.buffer, ev)
		m.mu.Unlock()
		return
	}
	e, rv := f.e, f.rv
	if e == nil || !newer(cm.ResourceVersion, rv) {
		m.mu.Unlock()
		return
	}
	f.rv = cm.ResourceVersion
	m.mu.Unlock()
	m.apply(cm.Namespace, e, []watch.Event{ev})
}

// flush ends one list of ns: the events that waited apply, those newer
// than what the entry holds.
func (m *lazyMode[T]) flush(ns string) {
	m.mu.Lock()
	f := m.followed[ns]
	if f == nil {
		m.mu.Unlock()
		return
	}
	f.listing--
	if f.listing > 0 {
		m.mu.Unlock()
		return
	}
	waited := f.buffer
	f.buffer = nil
	e := f.e
	if e == nil {
		delete(m.followed, ns) // listed, but not cached
		m.mu.Unlock()
		return
	}
	var apply []watch.Event
	for _, ev := range waited {
		if cm := ev.Object.(*corev1.ConfigMap); newer(cm.ResourceVersion, f.rv) {
			apply = append(apply, ev)
			f.rv = cm.ResourceVersion
		}
	}
	m.mu.Unlock()
	if len(apply) > 0 {
		m.apply(ns, e, apply)
	}
}

// apply puts events into the inputs of e, if it is still the entry of ns.
func (m *lazyMode[T]) apply(ns string, e *entry[T], events []watch.Event) {
	m.st.do(func(g *guarded[T]) {
		if g.st.cache.get(ns) != e {
			return
		}
		own := maps.Clone(e.cms)
		if own == nil {
			own = map[string]*corev1.ConfigMap{}
		}
		for _, ev := range events {
			cm := ev.Object.(*corev1.ConfigMap)
			if ev.Type == watch.Deleted || !m.c.isNamespaceLayer(cm) {
				delete(own, cm.Name)
			} else {
				own[cm.Name] = slim(cm)
			}
		}
		g.setInputs(ns, e, own, e.labels)
	})
}

// relistAll lists every followed namespace again, after the shared watch
// expired: the events it missed are in the lists.
func (m *lazyMode[T]) relistAll() {
	m.mu.Lock()
	var todo []relist[T]
	for ns, f := range m.followed {
		if f.e != nil {
			f.listing++
			todo = append(todo, relist[T]{ns: ns, e: f.e})
		}
	}
	m.mu.Unlock()
	m.c.log.Info("Listing the followed namespaces again", "namespaces", len(todo))
	go func() {
		for _, r := range todo {
			select {
			case m.relists <- r:
			case <-m.ctx.Done():
				return
			}
		}
	}()
}

// relistWorker lists the namespaces sent to it: each list replaces what
// the entry holds, and ends the list for the dispatcher.
func (m *lazyMode[T]) relistWorker() {
	defer m.wg.Done()
	for {
		var r relist[T]
		select {
		case <-m.ctx.Done():
			return
		case r = <-m.relists:
		}
		delay := 100 * time.Millisecond
		for m.ctx.Err() == nil {
			list, err := m.client.CoreV1().ConfigMaps(r.ns).List(m.ctx, metav1.ListOptions{LabelSelector: m.c.nsLabels.String()})
			if err != nil {
				m.c.log.V(2).Info("Listing namespace ConfigMaps failed; retrying", "namespace", r.ns, "err", err, "after", delay)
				if !m.sleep(delay) {
					return
				}
				delay = min(2*delay, 30*time.Second)
				continue
			}
			own := slimAll(m.c.ownConfigMaps(pointers(list.Items)))
			m.mu.Lock()
			if f := m.followed[r.ns]; f != nil && f.e == r.e {
				f.rv = list.ResourceVersion
			}
			m.mu.Unlock()
			m.st.do(func(g *guarded[T]) { g.setInputs(r.ns, r.e, own, r.e.labels) })
			break
		}
		m.endList(r.ns)
	}
}

// sleep waits d, and reports false if the resolver stopped meanwhile.
func (m *lazyMode[T]) sleep(d time.Duration) bool {
	select {
	case <-m.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// slimAll slims every ConfigMap of cms, in place.
func slimAll(cms map[string]*corev1.ConfigMap) map[string]*corev1.ConfigMap {
	for name, cm := range cms {
		cms[name] = slim(cm)
	}
	return cms
}

// newer reports whether resourceVersion v is newer than have. Versions
// that are not comparable (client-go's fake clientset gives none) count
// as newer: the event applies.
func newer(v, have string) bool {
	if have == "" {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(v, have)
	return err != nil || c > 0
}
