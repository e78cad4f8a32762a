package namespaced

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Resolver turns the cluster ConfigMap, selector ConfigMaps and namespace
// ConfigMaps into one typed Snapshot per namespace, and caches it. Build
// one with NewLazy, NewInformer or NewFromReader, then Start it; every
// method works in every one of those modes. Its methods are safe for
// concurrent use; ForNamespace on a cached namespace takes no lock and
// allocates nothing.
type Resolver[T any] struct {
	cache  *nsCache[T] // st's, read without it on the hot path
	c      *core[T]
	st     *state[T]
	src    source[T]
	client kubernetes.Interface // to record Events through, when the options name no recorder
	cancel context.CancelFunc
	stopEv func()
}

// source is where a Resolver reads: Lazy mode, a Reader the caller has,
// or informers of its own.
type source[T any] interface {
	// start starts what the source runs, until ctx ends, and returns the
	// Reader the state reads once its caches are in sync.
	start(ctx context.Context) (Reader, error)
	// started hands the state every change the source sees from now; the
	// state is in effect.
	started(ctx context.Context) error
	// stop waits for what start began.
	stop()
	// first is a miss's first read of namespace ns, for its record; a
	// source that holds nothing reads nothing (nil).
	first(ctx context.Context, ns string) (*listing, error)
	// invalidate reads again what obj feeds.
	invalidate(obj any)
}

// NewLazy returns a resolver that reads a namespace's ConfigMaps on its
// first resolve, with one LIST scoped to the namespace and the required
// labels, and then keeps them current while the namespace stays in the
// cache (CacheSize namespaces) through one watch all cached namespaces
// share: the labelled ConfigMaps, cluster-wide, events of namespaces not
// cached dropped. A cached namespace costs no goroutine and no watch of
// its own. The cluster and selector ConfigMaps, and with selector layers
// the namespaces, come from informers. It needs list and watch on
// ConfigMaps cluster-wide.
func NewLazy[T any](client kubernetes.Interface, o Options[T]) (*Resolver[T], error) {
	return newResolver(o, client, func(c *core[T], st *state[T]) source[T] { return &lazyMode[T]{c: c, st: st, client: client} })
}

// NewInformer returns a resolver that keeps one label-filtered,
// cluster-wide ConfigMap informer, slimmed to what a layer needs (of a
// labelled ConfigMap whose name no namespace layer has, only its
// identity): a warm cache of every namespace's ConfigMaps, for operators
// who can grant cluster-wide list and watch. It is NewFromReader over
// informers of its own.
func NewInformer[T any](client kubernetes.Interface, o Options[T]) (*Resolver[T], error) {
	return newResolver(o, client, func(c *core[T], st *state[T]) source[T] {
		return &informerMode[T]{readerMode: readerMode[T]{st: st}, c: c, client: client}
	})
}

// NewFromReader returns a resolver that reads ConfigMaps (and, with
// selector layers, Namespaces) through a cache the caller already has,
// instead of starting watches of its own. It caches snapshots and
// rebuilds one only when what it was built from changed; the caller tells
// it of changes with Invalidate, from its ConfigMap (and Namespace)
// informers' event handlers. It records Events only through a recorder
// the options name.
func NewFromReader[T any](reader Reader, o Options[T]) (*Resolver[T], error) {
	if o.Cluster != nil {
		return nil, errors.New("namespaced: resolver options: Cluster is for NewLazy and NewInformer: NewFromReader's Reader serves the cluster ConfigMaps")
	}
	return newResolver(o, nil, func(c *core[T], st *state[T]) source[T] {
		return &readerMode[T]{st: st, r: reader}
	})
}

func newResolver[T any](o Options[T], client kubernetes.Interface, mk func(*core[T], *state[T]) source[T]) (*Resolver[T], error) {
	c, err := newCore(o)
	if err != nil {
		return nil, err
	}
	st := newState(c)
	src := mk(c, st)
	_, st.held = src.(*lazyMode[T])
	return &Resolver[T]{cache: st.cache, c: c, st: st, src: src, client: client}, nil
}

// Start reads the cluster ConfigMap (and, as the mode needs, starts its
// informers and watch and waits until they are in sync). An invalid
// cluster ConfigMap fails a first Start unless StartOnDefaults is set;
// started again, the configuration in effect stays. Stop
// releases everything Start began. A resolver started again after Stop
// brings what it kept cached up to date, and takes new subscriptions;
// those Stop ended stay ended.
func (r *Resolver[T]) Start(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(ctx)
	r.st.subs.restart()
	events, stopEv, err := r.c.events(ctx, r.client)
	r.stopEv = stopEv
	var rd Reader
	if err == nil {
		rd, err = r.src.start(ctx)
	}
	if err == nil {
		err = r.st.start(ctx, rd, events)
	}
	if err == nil {
		err = r.src.started(ctx)
	}
	if err != nil {
		r.halt()
	}
	return err
}

// halt stops what Start began and waits for it.
func (r *Resolver[T]) halt() {
	if r.cancel != nil {
		r.cancel()
	}
	r.src.stop()
	r.st.stop()
	if r.stopEv != nil {
		r.stopEv()
	}
}

// Stop stops every watch and informer the resolver started and waits for
// them, and ends every subscription: no subscriber is called after Stop
// returns but one already running, which finishes its call. What is
// cached stays readable.
func (r *Resolver[T]) Stop() {
	r.halt()
	r.st.subs.stop()
}

// ForNamespace returns the snapshot of namespace ns. A cached namespace is
// served with no lock and no allocation; otherwise the snapshot is built
// and cached, evicting a namespace not read lately (CLOCK) when the cache
// is full. The error is about reading; invalid tenant input never fails a
// resolve.
func (r *Resolver[T]) ForNamespace(ctx context.Context, ns string) (*Snapshot[T], error) {
	if e := r.cache.get(ns); e != nil { // the hot path: one probe, no lock
		if s := e.snap.Load(); s != nil {
			if !e.referenced.Load() { // a store only when the hand cleared it
				e.referenced.Store(true)
			}
			return s, nil
		}
	}
	return r.miss(ctx, ns)
}

// miss builds, caches and returns the snapshot of ns, not cached: apart
// from ForNamespace, whose cached read stays a probe and two loads.
func (r *Resolver[T]) miss(ctx context.Context, ns string) (*Snapshot[T], error) {
	start := time.Now()
	defer func() { r.c.m.latency.Observe(time.Since(start).Seconds()) }()
	r.c.m.misses.Inc()
	return r.st.miss(ctx, ns, r.src.first)
}

// cached returns the snapshot the resolver holds for namespace ns, without
// reading anything or changing what it holds: for a debugging page that a
// caller must not use to make the resolver read namespaces or push others
// out.
func (r *Resolver[T]) cached(ns string) (*Snapshot[T], bool) {
	if e := r.st.cache.get(ns); e != nil {
		if s := e.snap.Load(); s != nil {
			return s, true
		}
	}
	return nil, false
}

// Subscribe registers fn to be called with a cached namespace's previous
// and new snapshot each time it changes: for a change of the cluster or
// selector ConfigMaps, of the namespace's own ConfigMaps or of its
// labels. fn is called after the new snapshot is what ForNamespace
// returns, in the order of the changes, on a goroutine of the
// subscription's own with no lock held: fn may call anything on the
// resolver, and a slow fn delays only its own calls. While fn lags, a
// namespace's changes it has not seen are folded into one, from the
// snapshot it saw last to the newest, so what waits for it is bounded by
// the cached namespaces. cancel stops the calls and the goroutine; one
// already under way may finish after it returns. Stop ends every
// subscription; one made after Stop and before the next Start is never
// called.
func (r *Resolver[T]) Subscribe(fn func(ns string, old, new *Snapshot[T])) (cancel func()) {
	st := r.st
	st.mu.Lock()
	defer st.mu.Unlock()
	seen := make(map[string]*Snapshot[T], len(st.records))
	for ns, rec := range st.records {
		if s := rec.entry.snap.Load(); s != nil {
			seen[ns] = s
		}
	}
	return st.subs.add(fn, seen)
}

// WaitForSubscribers returns once every change applied before it was
// called is built, a namespace's change put off to bound a tenant's churn
// (at most ten rebuilds a second) included, and every subscriber has
// returned from its call for it; or with ctx's error when ctx is done
// first. A test changes what a resolver reads and waits so before it
// looks at what its snapshots are or its subscribers did. A subscriber
// must not call it: it would wait for itself.
func (r *Resolver[T]) WaitForSubscribers(ctx context.Context) error {
	if err := r.st.waitSettled(ctx); err != nil {
		return err
	}
	return r.st.subs.wait(ctx)
}

// Invalidate tells the resolver that obj, a ConfigMap or a Namespace (or
// cache.DeletedFinalStateUnknown holding one), was added, changed or
// deleted: what it feeds is read again (through the Reader, its
// informers, or, for a namespace ConfigMap in Lazy mode, a list of the
// namespace) and, if it changed, rebuilt, and subscribers are told. A
// resolver built with NewFromReader learns of changes only so: call it
// after the cache holds the change, from an informer's event handlers
// (cache.ResourceEventHandlerFuncs with Invalidate for AddFunc and
// DeleteFunc, and for UpdateFunc on the new object).
// The others watch for themselves, and need it only to be told to read
// again.
func (r *Resolver[T]) Invalidate(obj any) { r.src.invalidate(obj) }
