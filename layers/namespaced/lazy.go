package namespaced

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/workqueue"
)

// lazyMode reads a namespace's ConfigMaps on its first resolve, with one
// request scoped to it, and then follows them while the namespace stays
// cached through one watch that all cached namespaces share: a watch of
// the ConfigMaps that carry the required labels (and, with one layer name,
// that name), cluster-wide, whose events for namespaces not cached are
// dropped. A cached namespace costs no goroutine and no watch of its own.
// The cluster ConfigMap, and with selector layers the selector ConfigMaps
// and the namespaces, come from informers.
//
// Events and lists meet by resourceVersion (comparable since Kubernetes
// 1.34, KEP-5504): an event applies to a namespace only when it is newer
// than what the namespace holds, a list only when it is not older, and
// events that come while the namespace is being listed wait for the list.
// A watch that breaks resumes from the last version seen, across API
// server restarts; one that ends for good (its version expired, 410 Gone,
// or the server's versions went back) starts again from now, after a
// pause that grows while watches keep ending, and every followed
// namespace is listed again through client-go's rate-limited work queue.
// follows owns what is known of each namespace and writes out the steps;
// lazyMode does the reading.
type lazyMode[T any] struct {
	c      *core[T]
	st     *state[T]
	client kubernetes.Interface
	inf    *informerSet
	f      *follows[T]
	ctx    context.Context
	cancel context.CancelFunc
	stopEv func()
	queue  workqueue.TypedRateLimitingInterface[string]
	wg     sync.WaitGroup // the dispatcher and the relist workers

	// flushed wakes the dispatcher for the lists ended; it never blocks
	// who sends.
	flushed chan struct{}

	// unversioned: the server gave an object with no resourceVersion
	// (client-go's fake clientsets): the shared watch is a plain one.
	unversioned atomic.Bool
}

// relistWorkers bounds the lists of namespaces under way at once after the
// shared watch started again, or when the gate opened.
const relistWorkers = 4

// listPage bounds the ConfigMaps one list request returns: a tenant may
// label as many as it likes.
const listPage = 32

// relistTimeout bounds one relist: a list that hangs fails and is tried
// again, since the queue lists one namespace at a time.
const relistTimeout = 30 * time.Second

// relistPause and relistPauseMost bound the pause before a failed relist
// is tried again: it doubles with each failure of the namespace in a row.
const relistPause, relistPauseMost = 100 * time.Millisecond, 30 * time.Second

func newLazy[T any](c *core[T], st *state[T], client kubernetes.Interface) *lazyMode[T] {
	return &lazyMode[T]{c: c, st: st, client: client, stopEv: func() {}, flushed: make(chan struct{}, 1),
		f: newFollows[T](c.m.watches.Add)}
}

// follower is how the state has Lazy mode follow what it caches.
func (m *lazyMode[T]) follower() follower[T] { return lazyFollower[T]{m} }

// lazyFollower follows a cached namespace's own ConfigMaps through the
// shared watch, while the gate is open.
type lazyFollower[T any] struct{ m *lazyMode[T] }

func (l lazyFollower[T]) wants(cl *clusterState[T], ns string) bool {
	return cl.policy.open && !l.m.c.system(ns)
}

func (l lazyFollower[T]) follow(ns string, e *entry[T], at *listedAt, hold bool) context.CancelFunc {
	return l.m.f.follow(ns, e, at, hold)
}

func (l lazyFollower[T]) holds(ns string, e *entry[T]) bool { return l.m.f.holds(ns, e) }

// gateTurned stops following every namespace when the gate closed, their
// own ConfigMaps dropped; when it opened, it lists each again, its
// snapshot held until its list ends. (5)
func (l lazyFollower[T]) gateTurned(g *guarded[T]) { g.followAgain(true) }

func (m *lazyMode[T]) start(ctx context.Context) error {
	if m.client == nil {
		return fmt.Errorf("namespaced: a Lazy resolver needs a client")
	}
	m.ctx, m.cancel = context.WithCancel(ctx)
	m.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](relistPause, relistPauseMost),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: m.c.clock})
	m.f.begin(m.queue)
	// The workers stop with the context too, not only at Stop.
	context.AfterFunc(m.ctx, m.queue.ShutDown)
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
	w, err := m.watchFromNow()
	if err != nil {
		m.stop()
		return fmt.Errorf("namespaced: starting the ConfigMap watch: %w", err)
	}
	m.wg.Add(1 + relistWorkers)
	go m.dispatch(w)
	for range relistWorkers {
		go m.relistWorker(m.queue)
	}
	if err := m.st.begin(m.ctx, m.inf, events); err != nil {
		m.stop()
		return err
	}
	// A resolver started again lists the namespaces it kept: what they
	// hold may have changed while it was stopped. A snapshot held when it
	// stopped stays held until its list ends; one of a namespace no
	// longer followed is rebuilt now. (8)
	m.st.do(func(g *guarded[T]) { g.followAgain(false) })
	m.f.forgetHeldOver()
	m.st.rebuildStale()
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
	if m.queue != nil {
		m.queue.ShutDown()
	}
	m.inf.shutdown()
	m.wg.Wait()
	m.stopEv()
	m.f.end() // (8)
}

func (m *lazyMode[T]) cluster(context.Context) (clusterView[T], error) {
	return m.st.current()
}

// invalidate does nothing: Lazy mode watches for itself.
func (m *lazyMode[T]) invalidate(any) {}

// changed applies a change the informers saw: the cluster ConfigMap, a
// selector ConfigMap, or a namespace's labels.
func (m *lazyMode[T]) changed(obj any) {
	switch o := deletedObject(obj).(type) {
	case *corev1.ConfigMap:
		if m.c.isCluster(o) {
			m.st.applyCluster(func() (map[string]*corev1.ConfigMap, error) { return m.inf.clusters(m.ctx) }, o)
			return
		}
		cms, _ := m.inf.selectors(m.ctx)
		m.st.applySelectors(cms)
	case *corev1.Namespace:
		e := m.st.cachedOrTouch(o.Name) // a miss may have read its labels before
		if e == nil {
			return
		}
		ls, _ := m.inf.labels(m.ctx, o.Name)
		m.st.do(func(g *guarded[T]) {
			if m.f.holds(o.Name, e) {
				e.labels = ls // for the list under way to put in effect
				return
			}
			g.setInputs(o.Name, e, e.cms, ls, false)
		})
	}
}

func (m *lazyMode[T]) miss(ctx context.Context, ns string) (*Snapshot[T], error) {
	var run uint64
	listed := false
	defer func() {
		if listed {
			m.endList(ns, run)
		}
	}()
	return m.st.miss(ctx, ns, func(ctx context.Context, ns string, cl *clusterState[T]) (nsInput, error) {
		var in nsInput
		ls, err := m.inf.labels(ctx, ns)
		if err != nil {
			return in, fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		in.labels = ls
		if !m.follower().wants(cl, ns) {
			return in, nil
		}
		if !listed {
			listed = true
			run = m.f.beginList(ns) // (1) events from now wait for this list
		}
		// (2) A watch started from now after this epoch may miss a
		// change the list does not see.
		in.at.epoch = m.f.epochNow()
		in.cms, in.at.rv, err = m.list(ctx, ns)
		in.watch = err == nil
		return in, err
	})
}

// listOptions selects the namespace layers: the required labels and, with
// one layer name, that name, so that a tenant's other labelled ConfigMaps
// never reach the resolver.
func (m *lazyMode[T]) listOptions(o metav1.ListOptions) metav1.ListOptions {
	o.LabelSelector = m.c.nsLabels.String()
	if names := m.c.ownCMs; len(names) == 1 {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", names[0]).String()
	}
	return o
}

// list reads the namespace layers of ns, slimmed, and the version they
// are at, listPage ConfigMaps per request.
func (m *lazyMode[T]) list(ctx context.Context, ns string) (map[string]*corev1.ConfigMap, string, error) {
	own := map[string]*corev1.ConfigMap{}
	o := m.listOptions(metav1.ListOptions{Limit: listPage})
	for {
		list, err := m.client.CoreV1().ConfigMaps(ns).List(ctx, o)
		if err != nil {
			return nil, "", fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			if cm := &list.Items[i]; m.c.isNamespaceLayer(cm) {
				own[cm.Name] = slim(cm)
			}
		}
		if list.Continue == "" {
			return own, list.ResourceVersion, nil
		}
		o.Continue = list.Continue
	}
}

// endList hands the end of a list of ns to the dispatcher, which applies
// the events that waited, newer than what the list gave, before any later
// one. It never waits. (4)
func (m *lazyMode[T]) endList(ns string, run uint64) {
	if m.f.endList(ns, run) {
		wake(m.flushed)
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// watchFromNow starts the shared watch from the resourceVersion of now,
// learnt at the cost of one object: a list of at most one ConfigMap.
func (m *lazyMode[T]) watchFromNow() (watch.Interface, error) {
	cms := m.client.CoreV1().ConfigMaps("")
	list, err := cms.List(m.ctx, m.listOptions(metav1.ListOptions{Limit: 1}))
	if err != nil {
		return nil, err
	}
	if list.ResourceVersion == "" || m.unversioned.Load() || (len(list.Items) > 0 && list.Items[0].ResourceVersion == "") {
		// Objects without versions to resume from (client-go's fake
		// clientsets): a plain watch, started before anything is listed.
		return cms.Watch(m.ctx, m.listOptions(metav1.ListOptions{}))
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		w, err := cms.Watch(ctx, m.listOptions(o))
		var se apierrors.APIStatus
		if errors.As(err, &se) && versionsWentBack(se.Status()) {
			// The retry watcher would ask for that version forever.
			m.forgetVersions(se.Status())
			ended := watch.NewFakeWithChanSize(1, false)
			ended.Error(goneStatus())
			return ended, nil
		}
		if err != nil {
			return nil, err
		}
		return m.noteVersions(w), nil
	}}
	return watchtools.NewRetryWatcherWithContext(m.ctx, list.ResourceVersion, lw)
}

// versionsWentBack reports whether st refuses a watch for a version the
// server has not reached: its versions went back, as after etcd was
// restored from a snapshot. Retrying the same version would wait for
// ever.
func versionsWentBack(st metav1.Status) bool {
	if st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == metav1.CauseTypeResourceVersionTooLarge {
			return true
		}
	}
	return false
}

// forgetVersions drops the version each followed namespace was listed
// at: after the server's versions went back, every list and event is
// older than them, and would be dropped as stale. The relist that follows
// the watch's restart puts each namespace back as the server holds it.
func (m *lazyMode[T]) forgetVersions(st metav1.Status) {
	m.c.log.Info("The API server's resource versions went back (etcd restored from a snapshot?); listing every followed namespace again", "status", st.Message)
	m.f.forgetVersions()
}

// goneStatus ends a retry watcher as an expired version does.
func goneStatus() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "the server's resource versions went back"}
}

// noteVersions passes w's events on, noting an object with no
// resourceVersion: the retry watcher cannot resume from it and ends, and
// the next watch is a plain one.
func (m *lazyMode[T]) noteVersions(w watch.Interface) watch.Interface {
	out := make(chan watch.Event)
	pw := watch.NewProxyWatcher(out)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-pw.StopChan():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.ResourceVersion == "" {
					m.unversioned.Store(true)
				}
				if st, ok := ev.Object.(*metav1.Status); ok && ev.Type == watch.Error && versionsWentBack(*st) {
					m.forgetVersions(*st)
					ev.Object = goneStatus() // the retry watcher ends; dispatch starts again from now
				}
				select {
				case out <- ev:
				case <-pw.StopChan():
					return
				}
			}
		}
	}()
	return pw
}

// dispatch runs the shared watch and applies what it sees, one event at
// a time, and the events that waited for a list when the list ends. It
// ends with the resolver.
func (m *lazyMode[T]) dispatch(w watch.Interface) {
	defer m.wg.Done()
	const first, most = 100 * time.Millisecond, 30 * time.Second
	delay, plain := first, m.unversioned.Load()
	for {
		began := m.c.clock.Now()
		m.drain(w)
		w.Stop()
		if m.ctx.Err() != nil {
			return
		}
		// The watch ended for good: its version expired, or the server
		// refused it. Start again from now, after a pause that grows
		// while watches keep ending at once, and list every followed
		// namespace again.
		if m.c.clock.Since(began) > 2*most || (m.unversioned.Load() && !plain) {
			delay = first
		}
		plain = m.unversioned.Load()
		for {
			if !m.wait(delay) {
				return
			}
			delay = min(2*delay, most)
			var err error
			if w, err = m.watchFromNow(); err == nil {
				break
			}
			m.c.log.V(2).Info("Starting the ConfigMap watch failed; retrying", "err", err, "after", delay)
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
		case <-m.flushed:
			m.flushAll()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Error:
				m.c.log.Info("The ConfigMap watch ended; starting again from now", "status", apierrors.FromObject(ev.Object))
				return
			case watch.Added, watch.Modified, watch.Deleted:
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && slices.Contains(m.c.ownCMs, cm.Name) {
					m.event(watch.Event{Type: ev.Type, Object: slim(cm)})
				}
			}
		}
	}
}

// wait waits d, applying flushes meanwhile, and reports false if the
// resolver stopped.
func (m *lazyMode[T]) wait(d time.Duration) bool {
	t := m.c.clock.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return false
		case <-m.flushed:
			m.flushAll()
		case <-t.C():
			return true
		}
	}
}

// event applies one event to the namespace it is of, if followed: at
// once, or after the lists under way. (3)
func (m *lazyMode[T]) event(ev watch.Event) {
	if e, seq, ok := m.f.event(ev); ok {
		m.apply(ev.Object.(*corev1.ConfigMap).Namespace, e, seq, []watch.Event{ev})
	}
}

// flushAll ends the lists endList handed over. (4)
func (m *lazyMode[T]) flushAll() {
	for _, ns := range m.f.takeFlushes() {
		if e, seq, events := m.f.flush(ns); len(events) > 0 {
			m.apply(ns, e, seq, events)
		}
	}
}

// apply puts events into the inputs of e, if ns is still cached and
// followed as e, seq.
func (m *lazyMode[T]) apply(ns string, e *entry[T], seq uint64, events []watch.Event) {
	m.st.do(func(g *guarded[T]) {
		if !m.f.still(ns, e, seq) || g.st.cache.get(ns) != e {
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
				own[cm.Name] = cm
			}
		}
		g.setInputs(ns, e, own, e.labels, false)
	})
}

// relistAll lists every followed namespace again, after the shared watch
// started again from now: the changes it missed are in the lists. A
// namespace whose first list is under way is listed again once cached:
// that list began in the epoch this ends. (5)
func (m *lazyMode[T]) relistAll() {
	n := m.f.relistAll()
	m.c.log.Info("Listing the followed namespaces again", "namespaces", n)
}

// relistWorker lists the namespaces q holds, until q shuts down.
func (m *lazyMode[T]) relistWorker(q workqueue.TypedRateLimitingInterface[string]) {
	defer m.wg.Done()
	for {
		ns, shutdown := q.Get()
		if shutdown {
			return
		}
		m.relist(q, ns)
		q.Done(ns)
	}
}

// relist lists ns once for the entry it is followed for, and ends the
// list for the dispatcher. On a failure the namespace is queued again
// after a pause that doubles with each failure in a row, if still
// followed so: the worker moves on, and a namespace whose lists keep
// failing holds up no other. (6)
func (m *lazyMode[T]) relist(q workqueue.TypedRateLimitingInterface[string], ns string) {
	e, seq, run, ok := m.f.take(ns)
	if !ok {
		q.Forget(ns)
		return
	}
	defer m.endList(ns, run)
	if e == nil {
		q.Forget(ns) // no longer cached
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, relistTimeout)
	own, rv, err := m.list(ctx, ns)
	cancel()
	if err != nil {
		if m.f.failed(ns, e, seq) {
			m.c.log.V(2).Info("Listing namespace ConfigMaps failed; retrying", "namespace", ns, "err", err, "failures", q.NumRequeues(ns)+1)
			q.AddRateLimited(ns)
		}
		return
	}
	q.Forget(ns)
	m.listed(ns, e, seq, own, rv)
}

// listed puts what a worker listed at rv in effect for e, unless ns is no
// longer followed so or holds a newer version already (another list of
// it ended first). (6)
func (m *lazyMode[T]) listed(ns string, e *entry[T], seq uint64, own map[string]*corev1.ConfigMap, rv string) {
	m.st.do(func(g *guarded[T]) {
		if ok, held := m.f.listed(ns, e, seq, rv); ok {
			g.setInputs(ns, e, own, e.labels, held)
		}
	})
	if h := m.c.o.relisted; h != nil {
		h(ns, rv)
	}
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

// older reports whether resourceVersion v is older than have; versions
// that are not comparable are not.
func older(v, have string) bool {
	if v == "" || have == "" {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(v, have)
	return err == nil && c < 0
}
