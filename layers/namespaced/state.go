package namespaced

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/util/workqueue"
)

// ErrNotStarted is the error of a resolve or a check before Start.
var ErrNotStarted = errors.New("namespaced: resolver not started")

// entry is what a resolve reads of one cached namespace; it fills one
// cache line.
type entry[T any] struct {
	snap atomic.Pointer[Snapshot[T]] // nil until first built
	// referenced is set by a read, cleared by the eviction hand (CLOCK).
	referenced atomic.Bool
	pos        int32 // in the cache's ring
	// ns and hash are the namespace and its hash in the cache, set when
	// the entry is put there.
	ns   string
	hash uint64
	_    [24]byte // to 64 bytes
}

// record is everything a resolver knows of one namespace it caches. The
// state owns every record: only its methods, under its lock, touch one.
type record[T any] struct {
	entry *entry[T]
	gen   uint64 // counts the changes of the namespace's inputs
	// own are the namespace's ConfigMaps in Lazy mode, at their names'
	// places in NamespaceConfigMaps (nil: none): the newest version of
	// each seen by a list or the shared watch; versions, the version each
	// place was seen at, deletions included. Replaced, never changed in
	// place, once a build may read them (record.writable).
	own      []*corev1.ConfigMap
	versions []string
	reading  bool // its first read is under way: the miss builds it
	// what the last build was made from, and when
	builtOwn  []*corev1.ConfigMap
	layers    *ownLayers // made of the namespace's ConfigMaps the last time the gate was open: not parsed again while they stay
	labels    map[string]string
	builtCl   *clusterState[T]
	builtSels []*selectorLayer
	built     time.Time         // of the last rebuild
	reported  map[string]string // ConfigMap → the version reported ignored or refused
}

// tenantRebuildInterval bounds how often a namespace's own changes
// rebuild it: a tenant who rewrites a labelled ConfigMap in a loop costs
// at most ten rebuilds a second, the last write always applied, and
// delays no other namespace.
const tenantRebuildInterval = 100 * time.Millisecond

// buildWorkers is how many namespaces are built at once: a cluster change
// rebuilds every cached namespace, and a build is work for one core. The
// queue never hands one namespace to two of them.
const buildWorkers = 2

// state is what a caching resolver knows and changes, level-triggered as
// a controller is:
//
//  1. A change of a namespace's ConfigMaps or labels only records what
//     the source holds now, if it holds anything, and queues the
//     namespace in one rate-limited work queue; a tenant's change within
//     tenantRebuildInterval of the namespace's last rebuild is a delayed
//     add. A change of the cluster or selector ConfigMaps is read from
//     the Reader and put in effect at once, by whoever saw it, and queues
//     every cached namespace.
//  2. A worker (one of buildWorkers) takes a namespace and reads its
//     inputs as they are now (from its record or the Reader), builds its
//     snapshot outside the lock and publishes it, unless they changed
//     meanwhile.
//  3. Each published change is queued to every subscription.
//
// Its lock guards every field below it and every record. Nothing is
// called with it held but the queues' adds and the cache's writes. Lock
// order: clusterMu, then mu, then subscribers.mu, then a subscription's.
type state[T any] struct {
	c     *core[T]
	held  bool // records hold the namespaces' own ConfigMaps (Lazy mode)
	cache *nsCache[T]
	subs  subscribers[T]

	mu        sync.Mutex
	reader    Reader
	events    eventSink
	cluster   *clusterState[T]
	invalid   error                        // why the cluster ConfigMaps as stored were refused
	stored    map[string]*corev1.ConfigMap // them, when refused
	selectors []*selectorLayer
	records   map[string]*record[T]
	// selReported holds the selector ConfigMap versions whose refused
	// keys were reported: the same in every namespace.
	selReported map[string]string
	// contestsReported holds, by selector ConfigMap, the contest notes
	// reported of its version.
	contestsReported map[string]*notesSeen
	queue            workqueue.TypedRateLimitingInterface[string]
	dirty            map[string]bool // namespaces queued and not yet taken
	working          int             // workers on a key
	// relists holds the namespaces queued for a relist (Lazy mode), each
	// with the number of its latest queuing.
	relists   map[string]uint64
	relistSeq uint64
	settled   *sync.Cond // on mu: nothing queued, relisted or worked on
	workers   sync.WaitGroup
	// clusterMu keeps the cluster and selector ConfigMaps put in effect
	// in the order they were read: one change is often seen twice (the
	// cluster ConfigMap's informer and the labelled ConfigMaps').
	clusterMu sync.Mutex
	// clusterSeen counts the cluster and selector changes seen, for start
	// to read again one that came while it read.
	clusterSeen atomic.Uint64
	// epoch counts the times the server's versions went back (Lazy
	// mode), changed under mu: a list begun in an earlier epoch may hold
	// versions newer than the server's now, and is dropped.
	epoch atomic.Uint64
}

func newState[T any](c *core[T]) *state[T] {
	s := &state[T]{c: c, cache: newNSCache[T](), records: map[string]*record[T]{},
		dirty: map[string]bool{}, relists: map[string]uint64{}, selReported: map[string]string{}, contestsReported: map[string]*notesSeen{}}
	s.settled = sync.NewCond(&s.mu)
	s.subs.cache = s.cache
	return s
}

// retryPause and retryPauseMost bound the pause before a namespace whose
// read failed is read again: it doubles with each failure in a row.
const retryPause, retryPauseMost = 100 * time.Millisecond, 30 * time.Second

// start reads the cluster and selector ConfigMaps from str and puts them
// in effect, with events as the sink of Events, starts the workers until
// ctx ends, and queues every namespace still cached from an earlier run.
// An invalid cluster ConfigMap is reported and the configuration in
// effect from an earlier run stays; on a first start it is an error
// unless StartOnDefaults is set, in which case the defaults apply. A
// cluster or selector change seen while it reads is read again.
func (s *state[T]) start(ctx context.Context, r Reader, events eventSink) error {
	c := s.c
	seen := s.clusterSeen.Load()
	cms, err := c.clusters(ctx, r)
	if err != nil {
		return fmt.Errorf("namespaced: reading the cluster ConfigMaps: %w", err)
	}
	sels, err := c.selectors(ctx, r)
	if err != nil {
		return fmt.Errorf("namespaced: reading the selector ConfigMaps: %w", err)
	}
	s.mu.Lock()
	prev := s.cluster // started again: what is in effect stays, if the same
	s.mu.Unlock()
	cl, invalid := prev, error(nil)
	if !sameCluster(cl, cms) {
		cl, invalid = c.parseCluster(cms)
	}
	if invalid != nil {
		if prev == nil && !c.o.StartOnDefaults {
			return invalid
		}
		for _, cm := range cms {
			c.refused(events, cm, invalid)
		}
		if cl = prev; cl == nil { // started again, the last good stays
			if cl, err = c.parseCluster(nil); err != nil {
				return err
			}
		}
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryPause, retryPauseMost),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: c.clock})
	s.mu.Lock()
	s.reader, s.events, s.queue = r, events, q
	s.selectors = sels
	s.setCluster(cl)
	if invalid != nil {
		s.invalid, s.stored = invalid, cms
	}
	s.mu.Unlock()
	for range buildWorkers {
		s.workers.Go(func() {
			for s.work(ctx, q) {
			}
		})
	}
	context.AfterFunc(ctx, func() { s.halt(q) }) // the workers end with ctx, too
	if s.clusterSeen.Load() != seen {
		s.changed(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.o.Namespace, Name: c.clusterCMs[0]}})
		if c.selectorCMs != nil {
			s.changed(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.o.Namespace}})
		}
	}
	return nil
}

// stop shuts the workers' queue down and waits for them; what is
// cached stays, for a start to bring up to date.
func (s *state[T]) stop() {
	s.mu.Lock()
	q := s.queue
	s.mu.Unlock()
	s.halt(q)
	s.workers.Wait()
}

// halt shuts q down and, if it is the queue in effect, forgets what it
// held: nothing is built until the next start.
func (s *state[T]) halt(q workqueue.TypedRateLimitingInterface[string]) {
	if q == nil {
		return
	}
	s.mu.Lock()
	if s.queue == q {
		s.queue = nil
		clear(s.dirty)
		clear(s.relists)
		s.settled.Broadcast()
	}
	s.mu.Unlock()
	q.ShutDown()
}

// work takes one namespace from the queue and builds it (2); it returns
// false once the queue shut down.
func (s *state[T]) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	ns, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(ns)
	s.mu.Lock()
	delete(s.dirty, ns) // a change from now queues it again
	s.working++
	rec := s.records[ns]
	if rec != nil && rec.reading {
		rec = nil // its miss builds it
	}
	s.mu.Unlock()
	var err error
	if rec != nil {
		_, _, err = s.build(ctx, ns, rec)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.working--
	if err != nil && s.queue == q {
		s.c.log.V(2).Info("Reading a namespace failed; retrying", "namespace", ns, "err", err, "failures", q.NumRequeues(ns)+1)
		s.dirty[ns] = true
		q.AddRateLimited(ns)
	} else {
		q.Forget(ns)
	}
	s.settle()
	return true
}

// settle wakes waitSettled when nothing is left; s.mu is held.
func (s *state[T]) settle() {
	if len(s.dirty) == 0 && len(s.relists) == 0 && s.working == 0 {
		s.settled.Broadcast()
	}
}

// build reads the inputs of ns as they are now and, unless they are what
// its snapshot was built from, builds it and publishes it, unless its
// inputs, the cluster state or the selectors changed meanwhile (the
// change queued it again). It returns the snapshot built and whether it
// is the one in effect; the error is the Reader's.
func (s *state[T]) build(ctx context.Context, ns string, rec *record[T]) (*Snapshot[T], bool, error) {
	c := s.c
	s.mu.Lock()
	gen, cl, sels, own, r := rec.gen, s.cluster, s.selectors, rec.own, s.reader
	prev, prevOwn, prevLabels, prevCl, prevSels, prevLayers := rec.entry.snap.Load(), rec.builtOwn, rec.labels, rec.builtCl, rec.builtSels, rec.layers
	s.mu.Unlock()
	if cl == nil {
		return nil, false, ErrNotStarted
	}
	if !s.held && !c.system(ns) {
		cms, err := r.ConfigMaps(ctx, ns, c.nsLabels)
		if err != nil {
			return nil, false, fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
		}
		own = c.ownConfigMaps(cms)
	}
	ls, err := c.labels(ctx, r, ns)
	if err != nil {
		return nil, false, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	snap := prev
	var ignored []ignoredLayer
	var in inputs[T]
	unchanged := prev != nil && prevCl == cl && maps.Equal(prevLabels, ls) && sameSelection(prevSels, sels, ls) &&
		slices.EqualFunc(prevOwn, own, sameConfigMap)
	if !unchanged {
		in = inputs[T]{cluster: cl, selectors: sels, labels: ls, cms: present(own), system: c.system(ns), prior: prevLayers, next: &ownLayers{}}
		if snap, ignored, err = c.build(in); err != nil {
			// A defect, logged: the cluster layer decoded when it was
			// applied, and every other layer is optional.
			c.log.Error(err, "Resolving a namespace failed; keeping its previous snapshot", "namespace", ns)
			if snap = prev; snap == nil {
				snap = cl.base
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records[ns] != rec || rec.gen != gen || s.cluster != cl || !sameSlice(s.selectors, sels) {
		return snap, false, nil // changed meanwhile: queued again, or read again by the miss
	}
	rec.builtOwn, rec.labels, rec.builtCl, rec.builtSels = own, ls, cl, sels
	rec.reading = false // built: changes from now are the workers'
	if cur := rec.entry.snap.Load(); unchanged || cur != prev {
		return cur, true, nil // or a build of the same inputs (a miss's and a worker's) published first
	}
	if cl.policy.open {
		rec.layers = in.next // closed, the build reads none: those made are kept
	}
	if prev != nil {
		rec.built = c.clock.Now() // a rebuild: the first build is a miss's
	}
	s.report(rec, ignored, refusals(snap, sels, in.cms, s.c.o.TenantKeysDoc), contestNotes(snap, sels))
	if snap != cl.base {
		for _, d := range snap.rejected {
			c.m.rejected.WithLabelValues(d.Reason).Inc()
		}
	}
	if snap != prev {
		rec.entry.snap.Store(snap)
		s.subs.post(ns, snap, prev == nil)
	}
	return snap, true, nil
}

func sameSlice[E comparable](a, b []E) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// miss caches ns and builds its snapshot. first, the source's first read
// of it, runs outside the lock with the record already in place, so that
// a change seen meanwhile lands in the record and makes the build run
// again. A namespace evicted while it is read gets the snapshot of what
// was read, not cached.
func (s *state[T]) miss(ctx context.Context, ns string, first func(ctx context.Context, ns string) (*listing, error)) (*Snapshot[T], error) {
	s.mu.Lock()
	if s.queue == nil {
		s.mu.Unlock()
		return nil, ErrNotStarted
	}
	rec := s.records[ns]
	if rec == nil {
		rec = &record[T]{entry: &entry[T]{}, reading: true}
		s.records[ns] = rec
		s.cache.put(ns, rec.entry)
		if s.held && !s.c.system(ns) {
			s.c.m.watches.Inc()
		}
		s.evict(ns)
		s.c.m.cacheSize.Set(float64(s.cache.n))
	}
	s.mu.Unlock()
	if first != nil && rec.entry.snap.Load() == nil {
		l, err := first(ctx, ns)
		if err != nil {
			s.forget(ns, rec)
			return nil, err
		}
		s.mu.Lock()
		if l != nil && s.put(rec, l) {
			rec.gen++
		}
		s.mu.Unlock()
	}
	for {
		snap, current, err := s.build(ctx, ns, rec)
		if err != nil {
			s.forget(ns, rec)
			return nil, err
		}
		s.mu.Lock()
		evicted := s.records[ns] != rec
		s.mu.Unlock()
		if current || evicted {
			return snap, nil
		}
	}
}

// forget drops the record of ns whose first read failed.
func (s *state[T]) forget(ns string, rec *record[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records[ns] == rec && rec.entry.snap.Load() == nil {
		s.remove(ns)
	}
}

// changed reads again what obj, a ConfigMap or a Namespace (or the last
// state of a deleted one), feeds (1). What the Reader fails to give is
// logged: a Reader is a cache, read without I/O.
func (s *state[T]) changed(obj any) {
	c := s.c
	switch o := deletedObject(obj).(type) {
	case *corev1.ConfigMap:
		switch {
		case c.isCluster(o):
			s.clusterSeen.Add(1)
			if err := s.readCluster(context.Background()); err != nil {
				c.log.Error(err, "Reading the cluster ConfigMaps failed")
			}
		case o.Namespace == c.o.Namespace && c.selectorCMs != nil: // a selector ConfigMap, or one that was
			s.clusterSeen.Add(1)
			if err := s.readSelectors(context.Background()); err != nil {
				c.log.Error(err, "Reading the selector ConfigMaps failed")
			}
		case slices.Contains(c.ownCMs, o.Name):
			s.hold(o.Namespace, nil, true)
		}
	case *corev1.Namespace:
		s.hold(o.Name, nil, false)
	}
}

// hold changes what the record of ns holds with fn (nil: nothing held,
// the Reader changed), if ns is cached, and queues it when fn changed
// anything; tenant says whether the change is the tenant's (1).
func (s *state[T]) hold(ns string, fn func(*record[T]) bool, tenant bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.records[ns]
	if rec == nil || fn != nil && !fn(rec) {
		return
	}
	rec.gen++
	if s.queue == nil || rec.reading && rec.entry.snap.Load() == nil {
		return // its miss builds it
	}
	s.dirty[ns] = true
	if wait := tenantRebuildInterval - s.c.clock.Since(rec.built); tenant && wait > 0 {
		s.queue.AddAfter(ns, wait)
		return
	}
	s.queue.Add(ns)
}

// listing is what a list of a namespace's own ConfigMaps gave (Lazy
// mode): them at their places in NamespaceConfigMaps (nil: none there),
// the version the list was at, and the epoch it began in.
type listing struct {
	places []*corev1.ConfigMap
	rv     string
	epoch  uint64
}

// wentBack forgets every version a record holds: the server's versions
// went back (etcd restored from a snapshot), and every list and event
// would be older. With newEpoch (the watch said so), a list begun before
// is dropped too; a start, which cannot know, keeps those under way.
func (s *state[T]) wentBack(newEpoch bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if newEpoch {
		s.epoch.Add(1)
	}
	for _, rec := range s.records {
		rec.versions = nil
	}
}

// listed puts what a relist of ns gave into its record, as hold.
func (s *state[T]) listed(ns string, l *listing) {
	s.hold(ns, func(rec *record[T]) bool { return s.put(rec, l) }, true)
}

// seen puts what the shared watch saw of the ConfigMap at place i of ns,
// cm at version rv (nil: none there now), into its record, as hold.
func (s *state[T]) seen(ns string, i int, cm *corev1.ConfigMap, rv string) {
	s.hold(ns, func(rec *record[T]) bool {
		rec.writable(len(s.c.ownCMs))
		return rec.take(i, cm, rv, false)
	}, true)
}

// put puts l into rec unless l began in an earlier epoch, and reports
// whether what rec holds changed; s.mu is held.
func (s *state[T]) put(rec *record[T], l *listing) bool {
	if l.epoch != s.epoch.Load() {
		return false // the server's versions went back since: listed again
	}
	rec.writable(len(l.places))
	changed := false
	for i, cm := range l.places {
		changed = rec.take(i, cm, l.rv, true) || changed
	}
	return changed
}

// writable gives rec places of its own to change: a build may be reading
// the ones it has.
func (rec *record[T]) writable(n int) {
	own, versions := make([]*corev1.ConfigMap, n), make([]string, n)
	copy(own, rec.own)
	copy(versions, rec.versions)
	rec.own, rec.versions = own, versions
}

// take puts cm, seen at rv, at place i of what rec holds (nil: none
// there), unless rec holds the place from a newer event; one event
// applies only when newer than what rec holds there. A list counts at its
// own version, not its objects': after etcd is restored with its revision
// bumped, the objects' versions went back, the list's forward. Versions
// that are not comparable (objects without one, from client-go's fake
// clientset) apply in the order they come. It reports whether what rec
// holds changed; rec is writable.
func (rec *record[T]) take(i int, cm *corev1.ConfigMap, rv string, list bool) bool {
	if older(rv, rec.versions[i]) || !list && !newer(rv, rec.versions[i]) {
		return false
	}
	rec.versions[i] = rv
	if sameConfigMap(rec.own[i], cm) {
		return false
	}
	rec.own[i] = cm
	return true
}

// newer reports whether resourceVersion v is newer than have. Versions
// that are not comparable count as newer.
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

// touchAll queues every cached namespace: the cluster state or the
// selectors changed. s.mu is held.
func (s *state[T]) touchAll() {
	if s.queue == nil {
		return
	}
	for ns := range s.records {
		s.dirty[ns] = true
		s.queue.Add(ns)
	}
}

// readCluster puts the cluster ConfigMaps the Reader holds now in effect,
// unless they hold what is in effect already. An invalid set is refused,
// reported on the ConfigMaps that changed, and the last good
// configuration stays.
func (s *state[T]) readCluster(ctx context.Context) error {
	c := s.c
	s.clusterMu.Lock()
	defer s.clusterMu.Unlock()
	s.mu.Lock()
	r, cur, stored := s.reader, s.cluster, s.stored
	s.mu.Unlock()
	if r == nil {
		return nil // not started: Start reads them
	}
	cms, err := c.clusters(ctx, r)
	if err != nil {
		return err
	}
	if sameCluster(cur, cms) {
		s.mu.Lock()
		s.invalid, s.stored = nil, nil // back to what is in effect
		s.mu.Unlock()
		return nil
	}
	cl, err := c.parseCluster(cms)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if !maps.EqualFunc(stored, cms, sameConfigMap) { // reported once
			for name, cm := range cms {
				if !sameConfigMap(cm, cur.cms[name]) {
					c.refused(s.events, cm, err)
				}
			}
		}
		s.invalid, s.stored = err, cms
		return nil
	}
	s.setCluster(cl)
	for _, name := range c.clusterCMs {
		switch cm, old := cms[name], cur.cms[name]; {
		case cm == nil && old != nil:
			c.log.Info("Cluster ConfigMap deleted", "configMap", c.o.Namespace+"/"+name)
		case cm != nil && !sameConfigMap(cm, old):
			c.log.Info("Cluster ConfigMap applied", "configMap", cm.Namespace+"/"+cm.Name, "resourceVersion", cm.ResourceVersion)
		}
	}
	return nil
}

// setCluster puts cl in effect and queues every cached namespace; s.mu
// is held.
func (s *state[T]) setCluster(cl *clusterState[T]) {
	if old := s.cluster; old != nil && old.policy.open != cl.policy.open {
		s.c.log.Info("Namespace overrides turned", "open", cl.policy.open, "namespaces", s.cache.n)
	}
	s.cluster, s.invalid, s.stored = cl, nil, nil
	s.touchAll()
}

// readSelectors puts the selector ConfigMaps the Reader holds now in
// effect and queues every cached namespace: each build leaves alone one
// whose matching layers are the same.
func (s *state[T]) readSelectors(ctx context.Context) error {
	s.clusterMu.Lock()
	defer s.clusterMu.Unlock()
	s.mu.Lock()
	r := s.reader
	s.mu.Unlock()
	if r == nil {
		return nil
	}
	sels, err := s.c.selectors(ctx, r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.selectors = sels
	s.touchAll()
	return nil
}

// view returns what a check judges against; an error before Start.
func (s *state[T]) view(context.Context) (clusterView[T], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cluster == nil {
		return clusterView[T]{}, ErrNotStarted
	}
	sels := s.selectors
	return clusterView[T]{cl: s.cluster, stored: s.stored, invalid: s.invalid,
		selectors: func(context.Context) ([]*selectorLayer, error) { return sels, nil }}, nil
}

// each calls fn with every cached namespace and its record, under the
// lock.
func (s *state[T]) each(fn func(ns string, rec *record[T])) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns, rec := range s.records {
		fn(ns, rec)
	}
}

// waitSettled returns once nothing is queued, relisted or worked on, or
// ctx is done.
func (s *state[T]) waitSettled(ctx context.Context) error {
	return waitWhile(ctx, &s.mu, s.settled, func() bool { return len(s.dirty) > 0 || len(s.relists) > 0 || s.working > 0 })
}

// relist queues ns on q for a relist (Lazy mode), and records it, unless
// stopped: a start lists every cached namespace again.
func (s *state[T]) relist(q relistQueue, ns string) {
	s.mu.Lock()
	if s.queue == nil {
		s.mu.Unlock()
		return
	}
	s.relistSeq++
	s.relists[ns] = s.relistSeq
	s.mu.Unlock()
	q.Add(ns)
}

// relistTaken notes the queuing of ns that a relist now under way
// answers, and returns how to record its end, once its result is held
// (and ns queued).
func (s *state[T]) relistTaken(ns string) (done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.relists[ns]
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.relists[ns] == seq {
			delete(s.relists, ns)
			s.settle()
		}
	}
}

// waitWhile waits on cond, whose lock is mu, while more (called with mu
// held) reports true, or until ctx is done.
func waitWhile(ctx context.Context, mu *sync.Mutex, cond *sync.Cond, more func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		cond.Broadcast()
	})
	defer stop()
	mu.Lock()
	defer mu.Unlock()
	for more() {
		if err := ctx.Err(); err != nil {
			return err
		}
		cond.Wait()
	}
	return nil
}

// evict removes namespaces not read lately, other than keep, until the
// cache fits: by CLOCK, an approximation of least recently used that
// costs constant time per eviction. s.mu is held.
func (s *state[T]) evict(keep string) {
	for s.cache.n > s.c.o.CacheSize {
		victim := s.cache.victim(keep)
		if victim == "" {
			return
		}
		s.remove(victim)
		s.c.m.evictions.Inc()
	}
}

// remove drops ns; s.mu is held.
func (s *state[T]) remove(ns string) {
	s.cache.del(ns)
	delete(s.records, ns)
	delete(s.dirty, ns)
	s.settle()
	if s.held && !s.c.system(ns) {
		s.c.m.watches.Dec()
	}
	s.subs.post(ns, nil, false) // for each subscription to forget what it saw
	s.c.m.cacheSize.Set(float64(s.cache.n))
}
