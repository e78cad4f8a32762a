package namespaced

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"
)

// follows is everything Lazy mode knows of the namespaces it follows, and
// its one owner: for each namespace, the entry the shared watch updates,
// the version that entry holds, the lists under way, the events waiting
// for them and whether its snapshot is held until a list ends; for the
// mode, its runs (Start to Stop) and the shared watch's epochs. Its lock
// guards all of it and nothing else; nothing is called with it held but
// the relist queue's Add and the gauge of followed namespaces. The I/O
// (the lists, the watch, the dispatcher and the workers) is lazyMode's;
// what each step decides is here.
//
// A namespace's Lazy life, step by step (the code marks each step (n)):
//
//  1. A miss begins a list of the namespace: from now its events wait,
//     the newest per ConfigMap name, until every list of it ended.
//  2. The state caches the entry and has it followed from the version the
//     list gave. If the shared watch started again from now since the
//     list began (the epoch moved), the list may have missed a change the
//     new watch never delivers: the namespace is queued for a relist.
//  3. An event of a followed namespace with no list under way applies at
//     once when it is newer than what the entry holds; one of a namespace
//     not followed is dropped.
//  4. A list ends on the dispatcher, never on the lister's goroutine, so
//     that no event is applied between a list and the events that waited
//     for it; after the last list, those newer than what the entry holds
//     apply.
//  5. When the shared watch ends for good (its version expired, the
//     server's versions went back), the epoch moves and every followed
//     namespace is queued for a relist. When the gate opens, each cached
//     namespace is queued too, its snapshot held until its list ends.
//  6. A worker takes a queued namespace from the rate-limited queue and
//     lists it. A list not older than what the entry holds replaces the
//     entry's ConfigMaps (and releases a held snapshot); one that fails is
//     queued again after a pause that doubles per failure, its events
//     still waiting. Each list ends as in step 4.
//  7. Eviction, or the gate closing, stops following the entry; the
//     record stays while a list of the namespace is under way, for an
//     entry cached next.
//  8. Stop forgets every namespace and ends the run: a list begun in an
//     earlier run ends nothing. A snapshot held when the resolver stopped
//     stays held across the restart, until the namespace is followed
//     again; Start begins a new epoch, so a list made while stopped is
//     made again.
//
// Lock order, over the whole package: state.mu, then follows.mu, then
// subscribers.mu, then a subscription's mu. clusterMu and refreshMu are
// taken before state.mu. No lock is held while a subscriber, a list or a
// watch runs.
type follows[T any] struct {
	mu   sync.Mutex
	byNS map[string]*follow[T]
	// run counts the stops: a list begun before one ends nothing after
	// it. epoch counts the shared watch's starts from now (and the
	// stops): a list begun in an earlier epoch may have missed a change
	// the watch never delivers. seq numbers each following, to tell a
	// stale one apart: the gate may close and open again on one entry.
	run, epoch, seq uint64
	flushes         []string // a namespace per list ended, for the dispatcher
	queue           workqueue.TypedRateLimitingInterface[string]
	watches         func(delta float64) // the metric of followed namespaces
	// heldOver are the entries whose snapshot was held when the resolver
	// stopped: held still until Start follows them again.
	heldOver map[*entry[T]]bool
}

// follow is how the shared watch follows one namespace.
type follow[T any] struct {
	e   *entry[T] // the cached entry events update; nil while not cached
	seq uint64    // which following of e
	rv  string    // what e holds is at least this version ("": unknown)
	// listing counts the lists of the namespace under way or owed (a
	// miss's, a worker's, one queued); while any is, its events wait.
	listing int
	waiting map[string]watch.Event
	queued  bool // a relist is queued and not yet taken
	held    bool // e's snapshot stays until a list ends (the gate opened)
}

func newFollows[T any](watches func(float64)) *follows[T] {
	return &follows[T]{byNS: map[string]*follow[T]{}, watches: watches}
}

// of returns the record of ns, making one. f.mu is held.
func (f *follows[T]) of(ns string) *follow[T] {
	fl := f.byNS[ns]
	if fl == nil {
		fl = &follow[T]{}
		f.byNS[ns] = fl
	}
	return fl
}

// following returns the record of ns if it still follows e as seq. f.mu
// is held.
func (f *follows[T]) following(ns string, e *entry[T], seq uint64) (*follow[T], bool) {
	fl := f.byNS[ns]
	return fl, fl != nil && fl.e == e && fl.seq == seq
}

// begin starts a run with q as its relist queue, in a new epoch. (8)
func (f *follows[T]) begin(q workqueue.TypedRateLimitingInterface[string]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = q
	f.epoch++
}

// forgetHeldOver ends the holds the last stop kept, once Start has
// followed again every namespace it caches. (8)
func (f *follows[T]) forgetHeldOver() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heldOver = nil
}

// beginList makes the events of ns wait until the list ends, and returns
// the run it began in. (1)
func (f *follows[T]) beginList(ns string) (run uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.of(ns).listing++
	return f.run
}

// epochNow returns the shared watch's epoch.
func (f *follows[T]) epochNow() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch
}

// follow has the shared watch update e, the entry of ns just cached (or
// whose gate just opened): from where a list left it, or (at nil, or
// listed in an earlier epoch) after a relist, with e's snapshot held until
// then when hold is set. The state calls it with its lock held. (2)
func (f *follows[T]) follow(ns string, e *entry[T], at *listedAt, hold bool) context.CancelFunc {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.of(ns)
	if fl.e == nil {
		f.watches(1)
	}
	f.seq++
	fl.e, fl.seq, fl.rv, fl.held = e, f.seq, "", hold
	delete(f.heldOver, e)
	if at != nil {
		fl.rv = at.rv
	}
	if at == nil || at.epoch != f.epoch {
		f.enqueue(ns, fl)
	}
	seq := fl.seq
	return func() { f.unfollow(ns, e, seq) }
}

// holds reports whether e's snapshot is held until a list of ns ends.
func (f *follows[T]) holds(ns string, e *entry[T]) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.byNS[ns]
	return fl != nil && fl.e == e && fl.held || f.heldOver[e]
}

// unfollow stops following ns for e. (7)
func (f *follows[T]) unfollow(ns string, e *entry[T], seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.following(ns, e, seq)
	if !ok {
		return
	}
	fl.e, fl.rv, fl.held = nil, "", false
	f.watches(-1)
	if fl.listing == 0 {
		delete(f.byNS, ns)
	}
}

// enqueue queues a relist of ns, unless one is queued already; it counts
// as a list under way from now. f.mu is held. (5)
func (f *follows[T]) enqueue(ns string, fl *follow[T]) {
	if fl.queued || f.queue == nil {
		return
	}
	fl.queued = true
	fl.listing++
	f.queue.Add(ns)
}

// event returns what to apply for ev, an event of a labelled ConfigMap:
// the entry and following it goes to, or ok false when it waits for a
// list or is not for a followed namespace or not newer. (3)
func (f *follows[T]) event(ev watch.Event) (e *entry[T], seq uint64, ok bool) {
	cm := ev.Object.(*corev1.ConfigMap)
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.byNS[cm.Namespace]
	switch {
	case fl == nil:
		return nil, 0, false // a namespace not cached
	case fl.listing > 0:
		if fl.waiting == nil {
			fl.waiting = map[string]watch.Event{}
		}
		fl.waiting[cm.Name] = ev // the watch delivers in order: the newest
		return nil, 0, false
	case fl.e == nil || !newer(cm.ResourceVersion, fl.rv):
		return nil, 0, false
	}
	fl.rv = cm.ResourceVersion
	return fl.e, fl.seq, true
}

// endList hands the end of a list of ns, begun in run, to the dispatcher,
// and reports whether it did: a list begun before a stop ends nothing.
// (4)
func (f *follows[T]) endList(ns string, run uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if run != f.run {
		return false
	}
	f.flushes = append(f.flushes, ns)
	return true
}

// takeFlushes returns the lists ended since it was last called.
func (f *follows[T]) takeFlushes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	todo := f.flushes
	f.flushes = nil
	return todo
}

// flush ends one list of ns on the dispatcher. After the last, it returns
// the events that waited and are newer than what the entry holds, with
// the entry and following they go to. (4)
func (f *follows[T]) flush(ns string) (e *entry[T], seq uint64, apply []watch.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.byNS[ns]
	if fl == nil {
		return nil, 0, nil
	}
	if fl.listing--; fl.listing > 0 {
		return nil, 0, nil
	}
	waited := fl.waiting
	fl.waiting = nil
	if fl.e == nil {
		delete(f.byNS, ns) // listed, but not cached
		return nil, 0, nil
	}
	held := fl.rv
	for _, ev := range waited {
		if v := ev.Object.(*corev1.ConfigMap).ResourceVersion; newer(v, held) {
			apply = append(apply, ev)
			if newer(v, fl.rv) {
				fl.rv = v
			}
		}
	}
	return fl.e, fl.seq, apply
}

// relistAll starts a new epoch and queues every followed namespace for a
// relist; it returns how many. (5)
func (f *follows[T]) relistAll() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	n := 0
	for ns, fl := range f.byNS {
		if fl.e != nil {
			f.enqueue(ns, fl)
			n++
		}
	}
	return n
}

// take is a worker taking ns off the queue: it returns the entry and
// following the relist is for (nil: no longer cached), and the run it is
// of; ok is false when no relist of ns is owed (the run it was queued in
// ended). (6)
func (f *follows[T]) take(ns string) (e *entry[T], seq, run uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.byNS[ns]
	if fl == nil || !fl.queued {
		return nil, 0, 0, false
	}
	fl.queued = false // a change from now queues another
	return fl.e, fl.seq, f.run, true
}

// failed reports whether a failed relist of ns for e, seq is to be
// retried: when it is still followed so, and counts it as owed. (6)
func (f *follows[T]) failed(ns string, e *entry[T], seq uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.following(ns, e, seq)
	if !ok || fl.queued {
		return false // queued again already: the queue holds it
	}
	fl.queued = true
	fl.listing++
	return true
}

// listed reports whether a list of ns for e, seq at rv is to be put in
// effect (it is still followed so, and not older than what e holds), and
// whether it releases a held snapshot. The caller holds the state's lock,
// so that nothing comes between the check and the state's update. (6)
func (f *follows[T]) listed(ns string, e *entry[T], seq uint64, rv string) (ok, held bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.following(ns, e, seq)
	if !ok || older(rv, fl.rv) {
		return false, false
	}
	fl.rv = rv
	held, fl.held = fl.held, false
	return true, held
}

// still reports whether ns is still followed for e as seq. (4)
func (f *follows[T]) still(ns string, e *entry[T], seq uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.following(ns, e, seq)
	return ok
}

// forgetVersions drops the version each followed namespace holds: after
// the server's versions went back, every list and event is older than
// them, and would be dropped as stale. (5)
func (f *follows[T]) forgetVersions() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fl := range f.byNS {
		fl.rv = ""
	}
}

// end forgets every namespace and ends the run. (8)
func (f *follows[T]) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fl := range f.byNS {
		if fl.e != nil {
			f.watches(-1)
			if fl.held {
				if f.heldOver == nil {
					f.heldOver = map[*entry[T]]bool{}
				}
				f.heldOver[fl.e] = true
			}
		}
	}
	f.byNS, f.flushes, f.queue = map[string]*follow[T]{}, nil, nil
	f.run++
	f.epoch++
}
