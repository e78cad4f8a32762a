package namespaced

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// errNotStarted is returned by a resolve before Start.
var errNotStarted = errors.New("namespaced: resolver not started")

// entry is one cached namespace. What a resolve reads (snap, used, ns,
// hash) fills one cache line; the namespace's inputs, which only guarded
// reads, are behind a pointer.
type entry[T any] struct {
	snap atomic.Pointer[Snapshot[T]]
	// referenced is set by a read, cleared by the eviction hand (CLOCK).
	referenced atomic.Bool
	pos        int32 // in the cache's ring
	// ns and hash are the namespace and its hash in the cache, set when
	// the entry is put there.
	ns   string
	hash uint64
	*inputsOf
	_ [16]byte // to 64 bytes: one entry per cache line
}

// inputsOf is what a cached namespace's snapshot is built from, and its
// watch. It belongs to guarded.
type inputsOf struct {
	cms    map[string]*corev1.ConfigMap // the namespace's own, by name
	labels map[string]string            // the namespace's, with selector layers
	cancel context.CancelFunc           // stops following the namespace (follower)
	gen    uint64                       // the cluster generation the snapshot was built under
	built  time.Time                    // when the snapshot was last built
	later  bool                         // a rebuild is deferred (setInputs)
}

// tenantRebuildInterval bounds how often a namespace's own changes
// rebuild it: a tenant who rewrites a labelled ConfigMap in a loop costs
// at most ten rebuilds a second, the last write always applied, and
// delays no other namespace.
const tenantRebuildInterval = 100 * time.Millisecond

// change is a cached namespace whose snapshot a change replaced.
type change[T any] struct {
	ns       string
	old, new *Snapshot[T]
}

// state is what a caching resolver changes as ConfigMaps change. Its lock
// guards guarded, which only do hands out: no code reaches the cluster
// state, the selectors or an entry's inputs without holding it. The cache
// is read without the lock (nsCache says how); it is written only from
// guarded.
type state[T any] struct {
	c     *core[T]
	cache *nsCache[T]
	// fol follows the namespaces cached, for a source whose store does
	// not stay current by itself; set once, before Start.
	fol follower[T]

	mu sync.Mutex
	g  guarded[T]

	// clusterMu keeps cluster ConfigMaps applied in the order they were
	// read: each is parsed outside mu.
	clusterMu sync.Mutex

	// subs are told of every change a do made, in order, each after its
	// snapshot is readable; they run on goroutines of their own.
	subs subscribers[T]

	// reads counts the misses reading a namespace's inputs, so that a
	// change seen for a namespace not cached costs nothing when none is.
	reads atomic.Int32

	// deferred counts the rebuilds setInputs put off, for
	// WaitForSubscribers: deferredMu guards it, settled is signalled
	// when it falls to zero.
	deferredMu sync.Mutex
	deferred   int
	settled    *sync.Cond
}

// follower follows the own ConfigMaps of the namespaces a state caches,
// for a source whose store does not stay current by itself (Lazy mode).
// The state calls it with its lock held; it never calls the state.
type follower[T any] interface {
	// wants reports whether namespace ns reads its own ConfigMaps, and is
	// followed, under cluster state cl.
	wants(cl *clusterState[T], ns string) bool
	// follow follows ns for e from where a list left it (at nil: after a
	// list of its own), holding e's snapshot until that list ends when
	// hold is set; the function returned stops it.
	follow(ns string, e *entry[T], at *listedAt, hold bool) context.CancelFunc
	// holds reports whether e's snapshot is held until a list ends.
	holds(ns string, e *entry[T]) bool
	// gateTurned is told that the gate opened or closed.
	gateTurned(g *guarded[T])
}

// current is the follower of a source whose store stays current by
// itself (its informers, the caller's Reader): it follows nothing.
type current[T any] struct{}

func (current[T]) wants(*clusterState[T], string) bool { return false }
func (current[T]) follow(string, *entry[T], *listedAt, bool) context.CancelFunc {
	return func() {}
}
func (current[T]) holds(string, *entry[T]) bool { return false }
func (current[T]) gateTurned(*guarded[T])       {}

func newState[T any](c *core[T]) *state[T] {
	s := &state[T]{c: c, cache: newNSCache[T](), fol: current[T]{}}
	s.g = guarded[T]{c: c, st: s, reported: map[string]map[string]string{}}
	s.settled = sync.NewCond(&s.deferredMu)
	return s
}

// deferRebuild runs fn, a namespace's rebuild put off, after d on the
// resolver's clock.
func (s *state[T]) deferRebuild(d time.Duration, fn func(g *guarded[T])) {
	s.deferredMu.Lock()
	s.deferred++
	s.deferredMu.Unlock()
	// On a goroutine of its own: a fake clock calls fn with its own lock
	// held, and the rebuild reads the clock.
	s.c.clock.AfterFunc(d, func() {
		go func() {
			s.do(fn)
			s.deferredMu.Lock()
			defer s.deferredMu.Unlock()
			if s.deferred--; s.deferred == 0 {
				s.settled.Broadcast()
			}
		}()
	})
}

// waitDeferred returns once no rebuild is put off, or ctx is done.
func (s *state[T]) waitDeferred(ctx context.Context) error {
	return waitWhile(ctx, &s.deferredMu, s.settled, func() bool { return s.deferred > 0 })
}

// waitWhile waits on c, whose lock is mu, while more (called with mu
// held) reports true, or until ctx is done.
func waitWhile(ctx context.Context, mu *sync.Mutex, c *sync.Cond, more func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		c.Broadcast()
	})
	defer stop()
	mu.Lock()
	defer mu.Unlock()
	for more() {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.Wait()
	}
	return nil
}

// do runs fn with the lock held and posts the changes fn made to the
// subscribers, which are called later, on their own goroutines.
func (s *state[T]) do(fn func(g *guarded[T])) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.g)
	if len(s.g.changes) > 0 {
		s.subs.post(s.g.changes)
		s.g.changes = s.g.changes[:0]
	}
}

// begin puts the cluster and selector ConfigMaps read from src in effect,
// with events as the sink of Events. An invalid cluster ConfigMap is an
// error unless StartOnDefaults is set, in which case it is reported and
// the defaults apply.
func (s *state[T]) begin(ctx context.Context, src store, events eventSink) error {
	c := s.c
	cms, err := src.clusters(ctx)
	if err != nil {
		return fmt.Errorf("namespaced: reading the cluster ConfigMaps: %w", err)
	}
	cl, invalid := c.parseCluster(cms)
	if invalid != nil {
		if !c.o.StartOnDefaults {
			return invalid
		}
		for _, cm := range cms {
			c.refused(events, cm, invalid)
		}
		if cl, err = c.parseCluster(nil); err != nil {
			return err
		}
	}
	sels, err := src.selectors(ctx)
	if err != nil {
		return fmt.Errorf("namespaced: reading the selector ConfigMaps: %w", err)
	}
	s.do(func(g *guarded[T]) {
		g.events = events
		g.selectors = c.readSelectors(sels)
		g.setCluster(cl)
		g.invalid, g.stored = invalid, nil
		if invalid != nil {
			g.stored = cms
		}
	})
	s.rebuildStale() // a resolver started again
	return nil
}

// applyCluster puts the cluster ConfigMaps there are now, as read returns
// them, in effect, unless they hold what is in effect already; changed is
// the one whose change was seen (or its last state, deleted). An invalid
// set is refused, reported on changed, and the last good configuration
// stays. read runs under clusterMu: one change is often seen twice (by the
// cluster ConfigMap's own informer and by the informer of every
// ConfigMap), and a read made before the other's apply must not be
// applied after it. read's error is logged, and nothing changes.
func (s *state[T]) applyCluster(read func() (map[string]*corev1.ConfigMap, error), changed *corev1.ConfigMap) {
	s.clusterMu.Lock()
	defer s.clusterMu.Unlock()
	c := s.c
	cms, err := read()
	if err != nil {
		c.log.Error(err, "Reading the cluster ConfigMaps failed")
		return
	}
	if sameCluster(s.cluster(), cms) {
		s.do(func(g *guarded[T]) { g.invalid, g.stored = nil, nil }) // back to what is in effect
		return
	}
	cl, err := c.parseCluster(cms)
	if err != nil {
		s.do(func(g *guarded[T]) {
			c.refused(g.events, cms[changed.Name], err)
			g.invalid, g.stored = err, cms
		})
		return
	}
	s.do(func(g *guarded[T]) {
		g.setCluster(cl)
		g.invalid, g.stored = nil, nil
	})
	s.rebuildStale()
	if cm := cms[changed.Name]; cm == nil {
		c.log.Info("Cluster ConfigMap deleted", "configMap", changed.Namespace+"/"+changed.Name)
	} else {
		c.log.Info("Cluster ConfigMap applied", "configMap", cm.Namespace+"/"+cm.Name, "resourceVersion", cm.ResourceVersion)
	}
}

// rebuildBatch is how many namespaces rebuildStale rebuilds per turn of
// the lock.
const rebuildBatch = 256

// rebuildStale rebuilds the cached namespaces built under an older cluster
// state, rebuildBatch at a time, releasing the lock between batches: a
// cached read never waits (it takes no lock), a miss waits for one batch
// at most, never for the whole cache, and subscribers hear of each batch
// as it is done. The caller holds clusterMu, so a newer cluster state
// waits for this pass to end.
func (s *state[T]) rebuildStale() {
	var todo []*entry[T]
	s.do(func(g *guarded[T]) {
		g.st.cache.each(func(_ string, e *entry[T]) {
			if e.gen != g.gen {
				todo = append(todo, e)
			}
		})
	})
	for len(todo) > 0 {
		batch := todo[:min(len(todo), rebuildBatch)]
		todo = todo[len(batch):]
		s.do(func(g *guarded[T]) {
			for _, e := range batch {
				if g.st.cache.get(e.ns) == e && e.gen != g.gen { // still cached, not rebuilt meanwhile
					g.rebuild(e.ns, e)
				}
			}
		})
	}
}

// applySelectors puts the selector ConfigMaps cms in effect.
func (s *state[T]) applySelectors(cms []*corev1.ConfigMap) {
	sels := s.c.readSelectors(cms)
	s.do(func(g *guarded[T]) { g.setSelectors(sels) })
}

// cluster returns the cluster state in effect, nil before Start.
func (s *state[T]) cluster() *clusterState[T] {
	var cl *clusterState[T]
	s.do(func(g *guarded[T]) { cl = g.cluster })
	return cl
}

// current is the cluster view of the state: the cluster state in effect
// and, when the ConfigMaps as stored were refused, them and why; an error
// before Start.
func (s *state[T]) current() (clusterView[T], error) {
	var v clusterView[T]
	s.do(func(g *guarded[T]) { v = clusterView[T]{cl: g.cluster, stored: g.stored, invalid: g.invalid} })
	if v.cl == nil {
		return v, errNotStarted
	}
	return v, nil
}

// nsInput is what a namespace's snapshot is built from besides the
// cluster and selector state: what a mode read for it.
type nsInput struct {
	cms    map[string]*corev1.ConfigMap
	labels map[string]string
	// watch, in Lazy mode: the gate was open when the namespace's
	// ConfigMaps were read, by the list at; the namespace is followed
	// from there.
	watch bool
	at    listedAt
}

// listedAt is where a Lazy mode list of a namespace's ConfigMaps was: the
// version it gave, and the shared watch's epoch when it began.
type listedAt struct {
	rv    string
	epoch uint64
}

// miss builds and caches the snapshot of ns, reading its inputs with read
// outside the lock. A change of ns seen while it reads (touched) makes it
// read again: what it read may predate the change, which found nothing
// cached to apply to.
func (s *state[T]) miss(ctx context.Context, ns string, read func(context.Context, string, *clusterState[T]) (nsInput, error)) (*Snapshot[T], error) {
	s.reads.Add(1)
	defer s.reads.Add(-1)
	for {
		var cl *clusterState[T]
		var gen uint32
		s.do(func(g *guarded[T]) {
			if cl = g.cluster; cl != nil {
				gen = g.beginRead(ns)
			}
		})
		if cl == nil {
			return nil, errNotStarted
		}
		in, err := read(ctx, ns, cl)
		var snap *Snapshot[T]
		var again bool
		s.do(func(g *guarded[T]) {
			if err == nil {
				if again = g.reading[ns].gen != gen; !again {
					snap, again = g.insert(ns, in)
				}
			}
			g.endRead(ns)
		})
		if err != nil {
			return nil, err
		}
		if !again {
			return snap, nil
		}
	}
}

// inflight is what guarded knows of the reads of one namespace's inputs
// under way: how many, and how many times the namespace was touched
// meanwhile.
type inflight struct{ n, gen uint32 }

// beginRead records a read of ns under way and returns the touches so far.
func (g *guarded[T]) beginRead(ns string) uint32 {
	if g.reading == nil {
		g.reading = map[string]inflight{}
	}
	r := g.reading[ns]
	r.n++
	g.reading[ns] = r
	return r.gen
}

// endRead records the end of a read of ns.
func (g *guarded[T]) endRead(ns string) {
	if r := g.reading[ns]; r.n > 1 {
		r.n--
		g.reading[ns] = r
	} else {
		delete(g.reading, ns)
	}
}

// cachedOrTouch returns the entry of ns for a change of it the caller
// saw; with none, it tells the misses reading ns, which read again. (A
// miss under way holds reads: with none, one that starts now reads what
// the caller saw.)
func (s *state[T]) cachedOrTouch(ns string) *entry[T] {
	if s.reads.Load() == 0 {
		return s.cache.get(ns)
	}
	var e *entry[T]
	s.do(func(g *guarded[T]) {
		if e = g.st.cache.get(ns); e == nil {
			if r, ok := g.reading[ns]; ok {
				r.gen++
				g.reading[ns] = r
			}
		}
	})
	return e
}

// guarded is the part of a state its lock guards.
type guarded[T any] struct {
	c       *core[T]
	st      *state[T]
	events  eventSink
	cluster *clusterState[T]
	// invalid is why the cluster ConfigMaps as stored, stored, were
	// refused; both nil once a valid set is put in effect.
	invalid   error
	stored    map[string]*corev1.ConfigMap
	gen       uint64 // advanced by each cluster state put in effect
	selectors []*selectorLayer
	// reported holds, by namespace, the version of each ignored
	// ConfigMap ("kind/name") already reported; pruned with the
	// namespace.
	reported map[string]map[string]string
	changes  []change[T]
	// reading holds, by namespace, the reads of misses under way.
	reading map[string]inflight
}

// insert caches the snapshot of ns built from in, and returns it; again
// is true when whether ns is followed changed since in was read (the gate
// moved), so that it must be read again. A namespace cached meanwhile is
// returned as it is.
func (g *guarded[T]) insert(ns string, in nsInput) (snap *Snapshot[T], again bool) {
	c := g.c
	if e := g.st.cache.get(ns); e != nil && e.snap.Load() != nil {
		return e.snap.Load(), false
	}
	if in.watch != g.st.fol.wants(g.cluster, ns) {
		return nil, true
	}
	e := &entry[T]{inputsOf: &inputsOf{cms: in.cms, labels: in.labels}}
	if e.cms == nil {
		e.cms = map[string]*corev1.ConfigMap{}
	}
	snap = g.build(ns, e)
	e.gen = g.gen
	if snap == nil {
		snap = g.cluster.base // a defect, logged: the cluster configuration applies
	}
	e.snap.Store(snap)
	g.st.cache.put(ns, e)
	if in.watch {
		e.cancel = g.st.fol.follow(ns, e, &in.at, false)
	}
	g.evict(ns)
	c.m.cacheSize.Set(float64(g.st.cache.n))
	return snap, false
}

// build builds the snapshot of a cached namespace from its inputs and
// reports the layers it ignored. It returns nil on a defect (the cluster
// layer decoded when it was applied, and every other layer is optional),
// which it logs.
func (g *guarded[T]) build(ns string, e *entry[T]) *Snapshot[T] {
	c := g.c
	in := inputs[T]{cluster: g.cluster, selectors: g.selectors, labels: e.labels, cms: c.ordered(e.cms), system: c.system(ns)}
	s, ignored, err := c.build(in)
	if err != nil {
		c.log.Error(err, "Resolving a namespace failed; keeping its previous snapshot", "namespace", ns)
		return nil
	}
	g.report(ns, ignored)
	g.reportRefused(refusals(s, in.selectors, in.cms))
	if s != in.cluster.base {
		for _, d := range s.rejected {
			c.m.rejected.WithLabelValues(d.Reason).Inc()
		}
	}
	return s
}

// rebuild builds a cached namespace again and publishes its snapshot,
// recording the change. A namespace whose snapshot its follower holds
// keeps it until the list it waits for ends.
func (g *guarded[T]) rebuild(ns string, e *entry[T]) {
	if g.st.fol.holds(ns, e) {
		return
	}
	s := g.build(ns, e)
	e.gen, e.built, e.later = g.gen, g.c.clock.Now(), false
	if old := e.snap.Load(); s != nil && s != old {
		e.snap.Store(s)
		g.changes = append(g.changes, change[T]{ns: ns, old: old, new: s})
	}
}

// setCluster puts a new cluster state in effect, a new generation: every
// cached namespace is now stale, for rebuildStale to rebuild. The
// follower is told when the gate turned.
func (g *guarded[T]) setCluster(st *clusterState[T]) {
	old := g.cluster
	g.cluster = st
	g.gen++
	if old != nil && old.policy.open != st.policy.open {
		g.c.log.Info("Namespace overrides turned", "open", st.policy.open, "namespaces", g.st.cache.n)
		g.st.fol.gateTurned(g)
	}
}

// followAgain stops following every cached namespace and, where the
// follower wants it, follows it again after a list. With clear (the gate
// turned), what a namespace held goes, and its snapshot is held until its
// list ends, as is one whose snapshot was held already.
func (g *guarded[T]) followAgain(clear bool) {
	fol := g.st.fol
	g.st.cache.each(func(ns string, e *entry[T]) {
		hold := clear || fol.holds(ns, e)
		if e.cancel != nil {
			e.cancel()
			e.cancel = nil
		}
		if clear {
			e.cms = map[string]*corev1.ConfigMap{}
		}
		if fol.wants(g.cluster, ns) {
			e.cancel = fol.follow(ns, e, nil, hold)
		}
	})
}

// setSelectors puts new selector layers in effect and rebuilds the cached
// namespaces whose matching layers changed.
func (g *guarded[T]) setSelectors(next []*selectorLayer) {
	prev := g.selectors
	g.selectors = next
	g.st.cache.each(func(ns string, e *entry[T]) {
		if !sameSelection(prev, next, e.labels) {
			g.rebuild(ns, e)
		}
	})
}

// sameSelection reports whether the same selector layers, in the same
// versions and order, apply to a namespace with labels ls under a and b.
func sameSelection(a, b []*selectorLayer, ls map[string]string) bool {
	set := labels.Set(ls)
	match := func(sls []*selectorLayer) []*selectorLayer {
		var out []*selectorLayer
		for _, sl := range sls {
			if sl.selector.Matches(set) {
				out = append(out, sl)
			}
		}
		return out
	}
	ma, mb := match(a), match(b)
	if len(ma) != len(mb) {
		return false
	}
	for i := range ma {
		if ma[i].cm.Name != mb[i].cm.Name || !sameVersion(ma[i].cm, mb[i].cm) {
			return false
		}
	}
	return true
}

// setInputs puts a cached namespace's own ConfigMaps and labels in effect
// and rebuilds it, if it is still cached as e and they changed or, with
// released, a list released its held snapshot.
func (g *guarded[T]) setInputs(ns string, e *entry[T], cms map[string]*corev1.ConfigMap, ls map[string]string, released bool) {
	if g.st.cache.get(ns) != e || (!released && sameVersions(e.cms, cms) && maps.Equal(e.labels, ls)) {
		return
	}
	e.cms, e.labels = cms, ls
	// At most one rebuild per tenantRebuildInterval: a change within it
	// is applied at its end, with whatever came last.
	if wait := tenantRebuildInterval - g.c.clock.Since(e.built); wait > 0 {
		if !e.later {
			e.later = true
			g.st.deferRebuild(wait, func(g *guarded[T]) {
				if g.st.cache.get(ns) == e && e.later {
					// Cleared first: a rebuild held back by a list under
					// way leaves the list's end to apply the change.
					e.later = false
					g.rebuild(ns, e)
				}
			})
		}
		return
	}
	g.rebuild(ns, e)
}

func sameVersions(a, b map[string]*corev1.ConfigMap) bool {
	return maps.EqualFunc(a, b, sameVersion)
}

// sameVersion reports whether x and y are the same version of a
// ConfigMap: the same UID and resourceVersion, or, when there is no
// resourceVersion to go by (objects from client-go's fake clientset, or
// built by hand), the same labels, annotations and data.
func sameVersion(x, y *corev1.ConfigMap) bool {
	if x == y {
		return true
	}
	if x.UID != y.UID || x.ResourceVersion != y.ResourceVersion {
		return false
	}
	if x.ResourceVersion != "" {
		return true
	}
	return maps.Equal(x.Labels, y.Labels) && maps.Equal(x.Annotations, y.Annotations) && maps.Equal(x.Data, y.Data) &&
		maps.EqualFunc(x.BinaryData, y.BinaryData, bytes.Equal)
}

// evict removes namespaces not read lately, other than keep, until the
// cache fits: by CLOCK, an approximation of least recently used that
// costs constant time per eviction, not a scan of the cache.
func (g *guarded[T]) evict(keep string) {
	for g.st.cache.n > g.c.o.CacheSize {
		victim := g.st.cache.victim(keep)
		if victim == "" {
			return
		}
		g.remove(victim)
		g.c.m.evictions.Inc()
	}
}

// remove drops ns from the cache and stops its watch.
func (g *guarded[T]) remove(ns string) {
	if e := g.st.cache.get(ns); e != nil && e.cancel != nil {
		e.cancel()
	}
	g.st.cache.del(ns)
	delete(g.reported, ns)
}

// report surfaces each layer namespace ns ignored once per
// resourceVersion: a log line, a metric and a Warning Event on the
// ConfigMap.
func (g *guarded[T]) report(ns string, ignored []ignoredLayer) {
	for _, ig := range ignored {
		seen := g.reported[ns]
		if seen == nil {
			seen = map[string]string{}
			g.reported[ns] = seen
		}
		id := ig.kind + ":" + ig.cm.Namespace + "/" + ig.cm.Name
		if seen[id] == ig.cm.ResourceVersion {
			continue
		}
		seen[id] = ig.cm.ResourceVersion
		g.c.ignored(g.events, ig)
	}
}

// reportRefused records a KeysRefused Event on each ConfigMap in refused,
// once per resourceVersion.
func (g *guarded[T]) reportRefused(refused []refusal) {
	for _, r := range refused {
		// A selector ConfigMap's refusals are the same in every namespace
		// it applies to: one Event, kept under its own namespace.
		scope := r.cm.Namespace
		seen := g.reported[scope]
		if seen == nil {
			seen = map[string]string{}
			g.reported[scope] = seen
		}
		id := "refused:" + r.cm.Namespace + "/" + r.cm.Name
		if seen[id] == r.cm.ResourceVersion {
			continue
		}
		seen[id] = r.cm.ResourceVersion
		if g.events != nil {
			g.events.warn(r.cm, ReasonKeysRefused, "Merge", r.note)
		}
	}
}

// ignored reports one ignored layer: a log line, a metric and, through
// events when set, a Warning Event on its ConfigMap. The mistake is the
// tenant's (or a selector ConfigMap's author's), not the controller's:
// the line is informational, the Event is the warning.
func (c *core[T]) ignored(events eventSink, ig ignoredLayer) {
	c.log.Info("Ignoring an invalid ConfigMap", "configMap", ig.cm.Namespace+"/"+ig.cm.Name, "kind", ig.kind, "reason", ig.err.Err.Error())
	c.m.invalid.WithLabelValues(ig.kind).Inc()
	if events != nil {
		events.warn(ig.cm, ReasonInvalidConfiguration, "Merge", "Ignored as a whole: "+ig.err.Err.Error())
	}
}

// refused reports a cluster ConfigMap that was not applied.
func (c *core[T]) refused(events eventSink, cm *corev1.ConfigMap, err error) {
	c.log.Error(err, "Refused an invalid ConfigMap; the last good configuration stays")
	c.m.invalid.WithLabelValues(KindCluster).Inc()
	if cm != nil && events != nil {
		events.warn(cm, ReasonInvalidConfiguration, "Apply", "Not applied, the last good configuration stays: "+err.Error())
	}
}

// subscribers are the functions Subscribe registered. Each subscription
// has a queue of its own, drained by a goroutine of its own with no lock
// held, so that a subscriber may call anything on the resolver
// (Invalidate, ForNamespace) and a slow one delays only itself.
//
// The lock order is written on follows.
type subscribers[T any] struct {
	mu      sync.Mutex
	list    []*subscription[T]
	stopped bool // the resolver stopped: no subscription runs
}

// subscription is one subscriber and the changes it has yet to see. A
// change of a namespace whose previous change it has not seen yet
// replaces that one (its old snapshot kept): the queue holds at most one
// change per namespace, whatever the subscriber's pace.
type subscription[T any] struct {
	fn func(ns string, old, new *Snapshot[T])

	mu      sync.Mutex
	wake    *sync.Cond
	queue   []queued[T]    // in the order posted; ns "" is a slot a later change of its namespace took
	base    int            // how many slots were taken off the queue's front
	at      map[string]int // namespace → its slot, counted from the first ever posted
	posted  uint64         // changes posted
	seen    uint64         // the seq of the last change fn returned from
	busy    bool           // fn is running
	off     bool
	stopped chan struct{}
}

type queued[T any] struct {
	change[T]
	seq uint64
}

// add registers fn, starts its goroutine, and returns how to stop both.
// Once the resolver stopped, fn is never called.
func (s *subscribers[T]) add(fn func(ns string, old, new *Snapshot[T])) (cancel func()) {
	sub := &subscription[T]{fn: fn, at: map[string]int{}, stopped: make(chan struct{})}
	sub.wake = sync.NewCond(&sub.mu)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return func() {}
	}
	s.list = append(s.list, sub)
	go sub.run()
	return func() {
		s.mu.Lock()
		s.list = slices.DeleteFunc(s.list, func(x *subscription[T]) bool { return x == sub })
		s.mu.Unlock()
		sub.cancel()
	}
}

// stop cancels every subscription; until restart, none is taken. It does
// not wait for a subscriber that is running: Stop may be called from one.
func (s *subscribers[T]) stop() {
	s.mu.Lock()
	list := s.list
	s.list, s.stopped = nil, true
	s.mu.Unlock()
	for _, sub := range list {
		sub.cancel()
	}
}

// restart takes subscriptions again after stop.
func (s *subscribers[T]) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = false
}

// cancel ends the subscription: its goroutine returns once fn, if
// running, has.
func (sub *subscription[T]) cancel() {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.off = true
	sub.queue, sub.at = nil, nil
	sub.wake.Broadcast()
}

// post queues changes for every subscriber. The caller holds state.mu, so
// changes are posted in the order they were made.
func (s *subscribers[T]) post(changes []change[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.list {
		sub.post(changes)
	}
}

func (sub *subscription[T]) post(changes []change[T]) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.off {
		return
	}
	for _, ch := range changes {
		sub.posted++
		if i, ok := sub.at[ch.ns]; ok {
			ch.old = sub.queue[i-sub.base].old // what the subscriber saw last
			sub.queue[i-sub.base].ns = ""
		}
		sub.at[ch.ns] = sub.base + len(sub.queue)
		sub.queue = append(sub.queue, queued[T]{change: ch, seq: sub.posted})
	}
	sub.wake.Broadcast()
}

// run calls fn for each queued change, in order, with no lock held, until
// the subscription is cancelled.
func (sub *subscription[T]) run() {
	defer close(sub.stopped)
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for {
		for !sub.off && len(sub.queue) == 0 {
			sub.wake.Wait()
		}
		if sub.off {
			return
		}
		q := sub.queue[0]
		sub.queue = sub.queue[1:]
		sub.base++
		if len(sub.queue) == 0 {
			sub.queue = nil // let the backing array go
		}
		if q.ns == "" {
			continue // taken by a later change of its namespace
		}
		delete(sub.at, q.ns)
		sub.busy = true
		sub.mu.Unlock()
		sub.fn(q.ns, q.old, q.new)
		sub.mu.Lock()
		sub.busy = false
		sub.seen = q.seq
		sub.wake.Broadcast()
	}
}

// wait returns once fn has returned from every change posted before the
// call, or the subscription was cancelled, or ctx is done.
func (sub *subscription[T]) wait(ctx context.Context) error {
	sub.mu.Lock()
	target := sub.posted
	sub.mu.Unlock()
	return waitWhile(ctx, &sub.mu, sub.wake, func() bool {
		return !sub.off && sub.seen < target && (len(sub.queue) > 0 || sub.busy)
	})
}

// wait is subscription.wait for every subscriber.
func (s *subscribers[T]) wait(ctx context.Context) error {
	s.mu.Lock()
	list := slices.Clone(s.list)
	s.mu.Unlock()
	for _, sub := range list {
		if err := sub.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
