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
// events that come while the namespace is being listed wait for the list,
// the newest per layer name. A watch that breaks resumes from the last
// version seen, across API server restarts; one that ends for good (its
// version expired, 410 Gone) starts again from now, after a pause that
// grows while watches keep ending, and every followed namespace is listed
// again, those whose first list was under way too, so that no change is
// lost.
//
// Every state change of a namespace happens either under a list (its
// events wait) or on the dispatcher, one event at a time; the dispatcher
// alone ends a namespace's lists, so the two never interleave.
type lazyMode[T any] struct {
	c      *core[T]
	st     *state[T]
	client kubernetes.Interface
	inf    *informerSet
	ctx    context.Context
	cancel context.CancelFunc
	stopEv func()
	wg     sync.WaitGroup // the dispatcher and the relist workers

	// flushed wakes the dispatcher for flushes, queued a worker for
	// relists; neither blocks who sends.
	flushed, queued chan struct{}

	// unversioned: the server gave an object with no resourceVersion
	// (client-go's fake clientsets): the shared watch is a plain one.
	unversioned atomic.Bool

	mu  sync.Mutex
	seq uint64 // numbers each following, to tell a stale one apart
	// run counts the resolver's stops: a list begun before one ends
	// nothing after it. epoch counts the shared watch's starts from now
	// (and the stops): a list begun in an earlier epoch may have missed a
	// change the watch never delivers.
	run, epoch uint64
	followed   map[string]*follow[T] // by namespace
	flushes    []string              // a namespace per list ended, for the dispatcher
	relists    []string              // namespaces to list again, for the workers
}

// follow is how the shared watch follows one namespace.
type follow[T any] struct {
	e   *entry[T] // the cached entry events update; nil while not cached
	seq uint64    // which following of e (the gate may close and open again on one entry)
	rv  string    // what e holds is at least this version ("": unknown)
	// listing counts the lists of the namespace under way, a miss's or a
	// worker's; while any is, its events wait, the newest per ConfigMap
	// name, to apply once the last list ended.
	listing int
	waiting map[string]watch.Event
	queued  bool          // a worker is to list the namespace again
	retry   time.Duration // the pause before the next list, after failures in a row
}

// relistWorkers bounds the lists of namespaces under way at once after the
// shared watch started again, or when the gate opened.
const relistWorkers = 4

// listPage bounds the ConfigMaps one list request returns: a tenant may
// label as many as it likes.
const listPage = 32

func newLazy[T any](c *core[T], st *state[T], client kubernetes.Interface) *lazyMode[T] {
	m := &lazyMode[T]{c: c, st: st, client: client, stopEv: func() {},
		flushed: make(chan struct{}, 1), queued: make(chan struct{}, 1), followed: map[string]*follow[T]{}}
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
	w, err := m.watchFromNow()
	if err != nil {
		m.stop()
		return fmt.Errorf("namespaced: starting the ConfigMap watch: %w", err)
	}
	m.wg.Add(1 + relistWorkers)
	go m.dispatch(w)
	for range relistWorkers {
		go m.relistWorker()
	}
	if err := m.st.begin(m.ctx, m.inf, events); err != nil {
		m.stop()
		return err
	}
	// A resolver started again lists the namespaces it kept: what they
	// hold may have changed while it was stopped.
	m.st.do(func(g *guarded[T]) { g.followAgain(false) })
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
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.followed {
		if f.e != nil {
			m.c.m.watches.Dec()
		}
	}
	m.followed, m.flushes, m.relists = map[string]*follow[T]{}, nil, nil
	m.run++
	m.epoch++
}

// changed applies a change the informers saw: the cluster ConfigMap, a
// selector ConfigMap, or a namespace's labels.
func (m *lazyMode[T]) changed(obj any) {
	switch o := deletedObject(obj).(type) {
	case *corev1.ConfigMap:
		if m.c.isCluster(o) {
			cms, err := m.inf.clusters(m.ctx)
			if err != nil {
				m.c.log.Error(err, "Reading the cluster ConfigMaps failed")
				return
			}
			m.st.applyCluster(cms, o)
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
			if e.pending {
				e.labels = ls // for the list under way to put in effect
				return
			}
			g.setInputs(o.Name, e, e.cms, ls)
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
		if !cl.policy.open || m.c.system(ns) {
			return in, nil
		}
		if !listed {
			listed = true
			run = m.beginList(ns) // events from now wait for this list
		}
		// A watch started from now after this epoch may miss a change
		// the list does not see.
		in.at.epoch = m.currentEpoch()
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

// beginList makes the events of ns wait until endList, and returns the
// run it began in.
func (m *lazyMode[T]) beginList(ns string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.followedAs(ns).listing++
	return m.run
}

func (m *lazyMode[T]) currentEpoch() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// followedAs returns how ns is followed, recording it if it is not.
// m.mu is held.
func (m *lazyMode[T]) followedAs(ns string) *follow[T] {
	f := m.followed[ns]
	if f == nil {
		f = &follow[T]{}
		m.followed[ns] = f
	}
	return f
}

// endList hands ns to the dispatcher, which applies the events that
// waited, newer than what the list gave, before any later one. It never
// waits. A list begun before the resolver stopped ends nothing: what it
// counted went with the stop.
func (m *lazyMode[T]) endList(ns string, run uint64) {
	m.mu.Lock()
	if run != m.run {
		m.mu.Unlock()
		return
	}
	m.flushes = append(m.flushes, ns)
	m.mu.Unlock()
	wake(m.flushed)
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// follow makes the shared watch update e, the entry of ns just cached
// (or whose gate just opened): from where a list left it, or (at nil, or
// listed in an earlier epoch) after a worker listed it again. guarded
// calls it with the state lock held. The returned function stops
// following it.
func (m *lazyMode[T]) follow(ns string, e *entry[T], at *listedAt) context.CancelFunc {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.followedAs(ns)
	if f.e == nil {
		m.c.m.watches.Inc()
	}
	m.seq++
	f.e, f.seq, f.rv = e, m.seq, ""
	if at != nil {
		f.rv = at.rv
	}
	if at == nil || at.epoch != m.epoch {
		m.enqueue(ns, f)
	}
	seq := f.seq
	return func() { m.unfollow(ns, e, seq) }
}

// unfollow stops following ns for e (evicted, or the gate closed). Events
// that wait stay while a list of ns is under way: it may be for an entry
// cached next.
func (m *lazyMode[T]) unfollow(ns string, e *entry[T], seq uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.followed[ns]
	if f == nil || f.e != e || f.seq != seq {
		return
	}
	f.e, f.rv = nil, ""
	m.c.m.watches.Dec()
	if f.listing == 0 {
		delete(m.followed, ns)
	}
}

// following reports whether ns is still followed for e as seq. m.mu is
// held.
func (m *lazyMode[T]) following(ns string, e *entry[T], seq uint64) (*follow[T], bool) {
	f := m.followed[ns]
	return f, f != nil && f.e == e && f.seq == seq
}

// enqueue has a worker list ns again, unless one is to already. m.mu is
// held.
func (m *lazyMode[T]) enqueue(ns string, f *follow[T]) {
	if f.queued {
		return
	}
	f.queued = true
	f.listing++ // the worker's list, ended by endList
	m.relists = append(m.relists, ns)
	wake(m.queued)
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
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.followed {
		f.rv = ""
	}
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
// once, or after the lists under way.
func (m *lazyMode[T]) event(ev watch.Event) {
	cm := ev.Object.(*corev1.ConfigMap)
	m.mu.Lock()
	f := m.followed[cm.Namespace]
	switch {
	case f == nil:
		m.mu.Unlock()
		return // a namespace not cached
	case f.listing > 0:
		if f.waiting == nil {
			f.waiting = map[string]watch.Event{}
		}
		f.waiting[cm.Name] = ev // the watch delivers in order: the newest
		m.mu.Unlock()
		return
	}
	e, seq := f.e, f.seq
	if e == nil || !newer(cm.ResourceVersion, f.rv) {
		m.mu.Unlock()
		return
	}
	f.rv = cm.ResourceVersion
	m.mu.Unlock()
	m.apply(cm.Namespace, e, seq, []watch.Event{ev})
}

// flushAll ends the lists endList handed over.
func (m *lazyMode[T]) flushAll() {
	m.mu.Lock()
	todo := m.flushes
	m.flushes = nil
	m.mu.Unlock()
	for _, ns := range todo {
		m.flush(ns)
	}
}

// flush ends one list of ns; after the last, the events that waited
// apply, those newer than what the entry holds.
func (m *lazyMode[T]) flush(ns string) {
	m.mu.Lock()
	f := m.followed[ns]
	if f == nil {
		m.mu.Unlock()
		return
	}
	if f.listing--; f.listing > 0 {
		m.mu.Unlock()
		return
	}
	waited := f.waiting
	f.waiting = nil
	e, seq := f.e, f.seq
	if e == nil {
		delete(m.followed, ns) // listed, but not cached
		m.mu.Unlock()
		return
	}
	var apply []watch.Event
	held := f.rv
	for _, ev := range waited {
		if v := ev.Object.(*corev1.ConfigMap).ResourceVersion; newer(v, held) {
			apply = append(apply, ev)
			if newer(v, f.rv) {
				f.rv = v
			}
		}
	}
	m.mu.Unlock()
	if len(apply) > 0 {
		m.apply(ns, e, seq, apply)
	}
}

// apply puts events into the inputs of e, if ns is still cached and
// followed as e, seq.
func (m *lazyMode[T]) apply(ns string, e *entry[T], seq uint64, events []watch.Event) {
	m.st.do(func(g *guarded[T]) {
		m.mu.Lock()
		_, ok := m.following(ns, e, seq)
		m.mu.Unlock()
		if !ok || g.st.cache.get(ns) != e {
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
		g.setInputs(ns, e, own, e.labels)
	})
}

// relistAll lists every followed namespace again, after the shared watch
// started again from now: the changes it missed are in the lists. A
// namespace whose first list is under way is listed again once cached:
// that list began in the epoch this ends.
func (m *lazyMode[T]) relistAll() {
	m.mu.Lock()
	m.epoch++
	n := 0
	for ns, f := range m.followed {
		if f.e != nil {
			m.enqueue(ns, f)
			n++
		}
	}
	m.mu.Unlock()
	m.c.log.Info("Listing the followed namespaces again", "namespaces", n)
}

// relistWorker lists the namespaces enqueued: each list replaces what the
// entry holds, unless a newer one did, and ends the list for the
// dispatcher.
func (m *lazyMode[T]) relistWorker() {
	defer m.wg.Done()
	for {
		ns, e, seq, run, ok := m.nextRelist()
		if !ok {
			return
		}
		if e != nil {
			m.relist(ns, e, seq)
		}
		m.endList(ns, run)
	}
}

// nextRelist waits for a namespace to list again, and returns it with
// the entry and following its list is for (nil: no longer cached) and the
// run it is of; false when the resolver stopped.
func (m *lazyMode[T]) nextRelist() (ns string, e *entry[T], seq, run uint64, ok bool) {
	for {
		m.mu.Lock()
		if len(m.relists) > 0 {
			ns = m.relists[0]
			if m.relists = m.relists[1:]; len(m.relists) == 0 {
				m.relists = nil
			} else {
				wake(m.queued) // another worker may take the next
			}
			// Kept while queued: its listing counts this list.
			f := m.followed[ns]
			f.queued = false
			e, seq, run = f.e, f.seq, m.run
			m.mu.Unlock()
			return ns, e, seq, run, true
		}
		m.mu.Unlock()
		select {
		case <-m.ctx.Done():
			return "", nil, 0, 0, false
		case <-m.queued:
		}
	}
}

// relist lists ns for e, seq once. On a failure the namespace is
// enqueued again after a pause that doubles with each failure in a row,
// if still followed so: the worker moves on, and a namespace whose lists
// keep failing holds up no other.
func (m *lazyMode[T]) relist(ns string, e *entry[T], seq uint64) {
	own, rv, err := m.list(m.ctx, ns)
	if err == nil {
		m.listed(ns, e, seq, own, rv)
		return
	}
	var after time.Duration
	m.mu.Lock()
	f, ok := m.following(ns, e, seq)
	if ok {
		f.retry = min(max(2*f.retry, 100*time.Millisecond), 30*time.Second)
		after = f.retry
	}
	m.mu.Unlock()
	if !ok {
		return // evicted meanwhile, or the gate closed
	}
	m.c.log.V(2).Info("Listing namespace ConfigMaps failed; retrying", "namespace", ns, "err", err, "after", after)
	ctx := m.ctx
	m.c.clock.AfterFunc(after, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if f, ok := m.following(ns, e, seq); ok && ctx.Err() == nil {
			m.enqueue(ns, f)
		}
	})
}

// listed puts what a worker listed at rv in effect for e, unless ns is no
// longer followed so or holds a newer version already (another list of
// it ended first).
func (m *lazyMode[T]) listed(ns string, e *entry[T], seq uint64, own map[string]*corev1.ConfigMap, rv string) {
	m.st.do(func(g *guarded[T]) {
		m.mu.Lock()
		f, ok := m.following(ns, e, seq)
		if ok {
			f.retry = 0
		}
		if ok = ok && !older(rv, f.rv); ok {
			f.rv = rv
		}
		m.mu.Unlock()
		if ok {
			g.setInputs(ns, e, own, e.labels)
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
