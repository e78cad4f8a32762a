package namespaced

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Resolver turns the cluster ConfigMap, selector ConfigMaps and namespace
// ConfigMaps into one typed Snapshot per namespace. Build one with
// NewLazy, NewInformer, NewDirect or NewFromReader, then Start it. Its
// methods are safe for concurrent use; ForNamespace on a cached namespace
// takes no lock and allocates nothing.
type Resolver[T any] struct {
	c     *core[T]
	cache *nsCache[T] // st's; empty for good when the source caches nothing
	st    *state[T]
	src   source[T]
}

// source is one way of reading ConfigMaps: Lazy mode, the reader mode
// (the caller's Reader, or its own informers' listers) or Direct mode.
// Nothing outside a source asks which one it is.
type source[T any] interface {
	// follower is how the state has the source follow the namespaces it
	// caches.
	follower() follower[T]
	// start reads the cluster ConfigMap and starts what the source runs;
	// it returns once its caches are in sync.
	start(ctx context.Context) error
	// stop releases what start began and waits for it.
	stop()
	// miss returns the snapshot of a namespace that is not cached,
	// caching it when the source caches.
	miss(ctx context.Context, ns string) (*Snapshot[T], error)
	// cluster returns the cluster configuration in effect, the last
	// valid one or the defaults, with the ConfigMaps as stored when they
	// are refused.
	cluster(ctx context.Context) (clusterView[T], error)
	// invalidate reads again what obj feeds (Invalidate).
	invalidate(obj any)
}

// NewLazy returns a resolver that reads a namespace's ConfigMaps on its
// first resolve, with one LIST scoped to the namespace and the required
// labels, and then keeps them current while the namespace stays in the
// cache (CacheSize namespaces) through one watch all cached namespaces
// share: the labelled ConfigMaps, cluster-wide, events of namespaces not
// cached dropped. A cached namespace costs no goroutine and no watch of
// its own. The cluster ConfigMap is watched by name; start-up lists one
// labelled ConfigMap cluster-wide, for the version the watch starts from.
// It needs list and watch on ConfigMaps cluster-wide.
func NewLazy[T any](client kubernetes.Interface, o Options[T]) (*Resolver[T], error) {
	return newResolver(o, func(c *core[T], st *state[T]) source[T] { return newLazy(c, st, client) })
}

// NewInformer returns a resolver that keeps one label-filtered,
// cluster-wide ConfigMap informer: a warm cache of every namespace's
// ConfigMaps, for operators who can grant cluster-wide list and watch.
func NewInformer[T any](client kubernetes.Interface, o Options[T]) (*Resolver[T], error) {
	return newResolver(o, func(c *core[T], st *state[T]) source[T] { return newReaderMode(c, st, client, nil) })
}

// NewFromReader returns a resolver that reads ConfigMaps (and, with
// selector layers, Namespaces) through a cache the caller already has,
// instead of starting watches of its own. It caches snapshots and rebuilds
// one only when the resourceVersions it was built from change; the caller
// tells it of changes with Invalidate, or by adding EventHandler to its
// ConfigMap (and Namespace) informers.
func NewFromReader[T any](reader Reader, o Options[T]) (*Resolver[T], error) {
	return newResolver(o, func(c *core[T], st *state[T]) source[T] { return newReaderMode(c, st, nil, reader) })
}

// NewDirect returns a resolver that reads every layer with direct GETs on
// each call and caches no snapshot, for admission webhooks. Concurrent
// calls share nothing mutable but the cluster ConfigMap parsed last, and
// none waits for another.
func NewDirect[T any](client kubernetes.Interface, o Options[T]) (*Resolver[T], error) {
	return newResolver(o, func(c *core[T], _ *state[T]) source[T] {
		return &directMode[T]{c: c, client: client, reported: newReportTable()}
	})
}

func newResolver[T any](o Options[T], mk func(*core[T], *state[T]) source[T]) (*Resolver[T], error) {
	c, err := newCore(o)
	if err != nil {
		return nil, err
	}
	st := newState(c)
	src := mk(c, st)
	st.fol = src.follower()
	return &Resolver[T]{c: c, cache: st.cache, st: st, src: src}, nil
}

// Start reads the cluster ConfigMap (and, as the mode needs, starts its
// informers and waits until they are in sync). An invalid cluster
// ConfigMap fails Start unless StartOnDefaults is set. Stop releases
// everything Start began. A resolver started again after Stop takes new
// subscriptions; those Stop ended stay ended.
func (r *Resolver[T]) Start(ctx context.Context) error {
	r.st.subs.restart()
	return r.src.start(ctx)
}

// Stop stops every watch and informer the resolver started and waits for
// them, and ends every subscription: no subscriber is called after Stop
// returns but one already running, which finishes its call.
func (r *Resolver[T]) Stop() {
	r.src.stop()
	r.st.subs.stop()
}

// ForNamespace returns the snapshot of namespace ns. A cached namespace is
// served with no lock and no allocation; otherwise the snapshot is built
// and, unless the resolver is Direct, cached, evicting a namespace not
// read lately (CLOCK) when the cache is full. The error is about reading the
// cluster; invalid tenant input never fails a resolve.
func (r *Resolver[T]) ForNamespace(ctx context.Context, ns string) (*Snapshot[T], error) {
	if e := r.cache.get(ns); e != nil { // the hot path: one probe, no lock
		if s := e.snap.Load(); s != nil {
			if !e.referenced.Load() { // a store only when the hand cleared it
				e.referenced.Store(true)
			}
			return s, nil
		}
	}
	start := time.Now()
	defer func() { r.c.m.latency.Observe(time.Since(start).Seconds()) }()
	r.c.m.misses.Inc()
	return r.src.miss(ctx, ns)
}

// Cached returns the snapshot the resolver holds for namespace ns, without
// reading anything or changing what it holds: for a debugging page that a
// caller must not use to make the resolver read namespaces or push others
// out. A Direct resolver holds none.
func (r *Resolver[T]) Cached(ns string) (*Snapshot[T], bool) {
	if e := r.cache.get(ns); e != nil {
		if s := e.snap.Load(); s != nil {
			return s, true
		}
	}
	return nil, false
}

// Subscribe registers fn to be called with a cached namespace's previous
// and new snapshot each time it changes: once for each cached namespace
// a cluster or selector ConfigMap change affects, once for a change of a
// namespace's own ConfigMaps or of its labels. fn is called after the new
// snapshot is what ForNamespace returns (a later change may have replaced
// it since), in the order of the changes, on a goroutine of the
// subscription's own with no lock held: fn may call anything on the
// resolver, ForNamespace and Invalidate included, and a slow fn delays
// only its own calls. While fn lags, a namespace's changes it has not
// seen yet are folded into one, from the snapshot it saw last to the
// newest, so what waits for it is bounded by the cached namespaces. A
// Direct resolver caches nothing and never calls fn. cancel stops the
// calls and the goroutine; one already under way may finish after it
// returns. Stop ends every subscription; one made after Stop and before
// the next Start is never called.
func (r *Resolver[T]) Subscribe(fn func(ns string, old, new *Snapshot[T])) (cancel func()) {
	return r.st.subs.add(fn)
}

// WaitForSubscribers returns once every subscriber has returned from its
// call for every change applied before WaitForSubscribers was called, a
// namespace's change put off to bound a tenant's churn (at most ten
// rebuilds a second) included, or with ctx's error when ctx is done
// first. A test changes what a resolver reads and waits so before it
// looks at what its subscribers did. A subscriber must not call it: it
// would wait for itself.
func (r *Resolver[T]) WaitForSubscribers(ctx context.Context) error {
	if err := r.st.waitDeferred(ctx); err != nil {
		return err
	}
	return r.st.subs.wait(ctx)
}

// AffectedNamespaces returns, sorted, the namespaces whose configuration
// cm feeds: for the cluster ConfigMap, every cached namespace; for a
// selector ConfigMap, the cached namespaces its selector matches now or
// matched when it was last read; for a ConfigMap named as a namespace
// layer, its namespace (unless it is a system namespace), cached or not;
// for any other ConfigMap, none.
func (r *Resolver[T]) AffectedNamespaces(cm *corev1.ConfigMap) []string {
	c := r.c
	var out []string
	switch {
	case c.isCluster(cm):
		r.st.do(func(g *guarded[T]) {
			g.st.cache.each(func(ns string, _ *entry[T]) { out = append(out, ns) })
		})
	case cm.Namespace == c.o.Namespace && c.o.Selectors != nil:
		next := c.readSelectors([]*corev1.ConfigMap{cm})[0]
		r.st.do(func(g *guarded[T]) {
			var prev *selectorLayer
			for _, sl := range g.selectors {
				if sl.cm.Name == cm.Name {
					prev = sl
				}
			}
			if prev == nil && !c.isSelector(cm) {
				return
			}
			g.st.cache.each(func(ns string, e *entry[T]) {
				set := labels.Set(e.labels)
				if (c.isSelector(cm) && next.selector.Matches(set)) || (prev != nil && prev.selector.Matches(set)) {
					out = append(out, ns)
				}
			})
		})
	case slices.Contains(c.ownCMs, cm.Name) && !c.system(cm.Namespace):
		out = append(out, cm.Namespace)
	}
	slices.Sort(out)
	return out
}
