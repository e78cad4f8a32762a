package stratacr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratacfg/strata/layers/namespaced"
)

// Resolver is a namespaced resolver run by a manager. Its methods are the
// namespaced resolver's. Read it once Ready is closed (WaitReady, or the
// manager's readiness check ReadyCheck): before, ForNamespace returns an
// error, or a configuration that a change made while the resolver
// started may not have reached yet.
type Resolver[T any] struct {
	*namespaced.Resolver[T]
	mgr       manager.Manager
	index     *configMapIndex
	selectors bool
	// cluster names a cluster ConfigMap, and selector a ConfigMap of its
	// namespace that is none: told that they changed, the resolver reads
	// the cluster and the selector ConfigMaps again.
	cluster, selector *corev1.ConfigMap
	ready             chan struct{}
}

// New builds a resolver that reads ConfigMaps (and, with selector layers,
// Namespaces) through mgr's cache, and adds it to mgr. When the manager
// starts, the resolver waits for the cache's ConfigMap informer, reads the
// cluster ConfigMap, and then follows every change the informers see,
// reading a namespace's ConfigMaps from an index of the cache's objects
// its handler keeps, without the cache's per-call cost; it stops with the
// manager. It runs on every replica, leader or not, since webhooks and
// reconciles on each need the configuration.
//
// The index holds what the manager's ConfigMap informer delivers: where
// the manager's cache holds only some namespaces
// (cache.Options.DefaultNamespaces without cache.AllNamespaces), the
// others get no namespace layers, where a read through the cache would
// fail. CacheByObject's cache holds every namespace.
//
// Events about invalid ConfigMaps go through the manager's events.k8s.io
// recorder (none with o.NoEvents), its lines through the manager's
// logger, and its metrics (named after o.Name, "-" read as "_") into
// controller-runtime's registry, served on the manager's /metrics, unless
// o sets its own.
// Use CacheByObject to keep the manager's ConfigMap cache to what the
// resolver reads.
func New[T any](mgr manager.Manager, o namespaced.Options[T]) (*Resolver[T], error) {
	name := o.Name
	if name == "" {
		name = "strata-resolver"
	}
	if o.EventRecorder == nil && o.Recorder == nil && !o.NoEvents {
		o.EventRecorder = mgr.GetEventRecorder(name)
	}
	if o.Logger == nil {
		l := mgr.GetLogger().WithName(name)
		o.Logger = &l
	}
	own := o.Metrics == nil
	if own {
		o.Metrics = namespaced.NewMetrics(metricsPrefix(name))
	}
	index := &configMapIndex{byNS: map[string][]*corev1.ConfigMap{}, own: o.Namespace, layers: layerNames(o)}
	r, err := namespaced.NewFromReader(indexedReader{clientReader{mgr.GetCache()}, index}, o)
	if err != nil {
		return nil, err
	}
	unregister := func() {}
	if own {
		if unregister, err = o.Metrics.Register(ctrlmetrics.Registry); err != nil {
			if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
				return nil, fmt.Errorf("stratacr: registering the resolver's metrics with the manager's registry: metrics named %s_… are registered already, by another resolver of that name: set Options.Name to tell the resolvers apart, or Options.Metrics to register metrics of your own: %w", metricsPrefix(name), err)
			}
			return nil, fmt.Errorf("stratacr: registering the resolver's metrics with the manager's registry: %w", err)
		}
	}
	cluster := o.ClusterConfigMap
	if o.Parsed != nil && len(o.Parsed.Sections) > 0 {
		cluster = o.Parsed.Sections[0].ClusterConfigMap
	}
	out := &Resolver[T]{Resolver: r, mgr: mgr, index: index, selectors: o.Selectors != nil, ready: make(chan struct{}),
		cluster:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: cluster}},
		selector: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace}}}
	if err := mgr.Add(out); err != nil {
		unregister()
		return nil, fmt.Errorf("stratacr: adding the resolver to the manager: %w", err)
	}
	return out, nil
}

// metricsPrefix is the subsystem of the metrics of a resolver named name.
func metricsPrefix(name string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(name) }

// Start implements manager.Runnable:
//
//  1. get the cache's ConfigMap (and Namespace) informers and wait until
//     they have synced;
//  2. start the resolver, which reads the cluster and selector ConfigMaps
//     through the cache;
//  3. add the resolver's event handler to the informers and wait until
//     they have replayed what they hold, then read the cluster and
//     selector ConfigMaps again (a ConfigMap deleted between (2) and (3)
//     is not among what is replayed), so that nothing changed between
//     (2) and (3) is missed; the ConfigMaps' handler also fills an index,
//     from which, once every handler has replayed, the resolver reads
//     the ConfigMaps of a namespace, and of its own (the selector
//     ConfigMaps), until Start returns;
//  4. close Ready, and run until ctx is done.
func (r *Resolver[T]) Start(ctx context.Context) error {
	objs := []client.Object{&corev1.ConfigMap{}}
	if r.selectors {
		objs = append(objs, &corev1.Namespace{})
	}
	var infs []cache.Informer
	for _, obj := range objs { // (1)
		inf, err := r.mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("stratacr: the %T informer: %w", obj, err)
		}
		infs = append(infs, inf)
	}
	for _, inf := range infs {
		if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return fmt.Errorf("stratacr: the cache did not sync: %w", context.Cause(ctx))
		}
	}
	if err := r.Resolver.Start(ctx); err != nil { // (2)
		return err
	}
	defer r.Resolver.Stop()
	defer r.index.stop()
	h := toolscache.ResourceEventHandlerFuncs{ // a ConfigMap indexed, then anything read again
		AddFunc:    func(obj any) { r.index.put(obj); r.Invalidate(obj) },
		UpdateFunc: func(_, obj any) { r.index.put(obj); r.Invalidate(obj) },
		DeleteFunc: func(obj any) { r.index.del(obj); r.Invalidate(obj) },
	}
	for _, inf := range infs { // (3)
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return fmt.Errorf("stratacr: %w", err)
		}
		defer inf.RemoveEventHandler(reg) //nolint:errcheck // the manager is stopping
		if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			return fmt.Errorf("stratacr: the resolver's event handler did not sync: %w", context.Cause(ctx))
		}
	}
	r.index.serve()
	r.Invalidate(r.cluster)
	if r.selectors {
		r.Invalidate(r.selector)
	}
	close(r.ready) // (4)
	<-ctx.Done()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the
// resolver runs on every replica.
func (r *Resolver[T]) NeedLeaderElection() bool { return false }

// Ready is closed once the resolver has read the cluster ConfigMap and
// follows changes.
func (r *Resolver[T]) Ready() <-chan struct{} { return r.ready }

// WaitReady waits until the resolver is ready or ctx is done.
func (r *Resolver[T]) WaitReady(ctx context.Context) error {
	select {
	case <-r.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stratacr: the configuration is not loaded yet: %w", context.Cause(ctx))
	}
}

// ReadyCheck is a readiness check for the manager (AddReadyzCheck): it
// fails until the resolver has read the cluster ConfigMaps, so that a
// replica takes no webhook traffic before it can answer with the
// configuration.
func (r *Resolver[T]) ReadyCheck(*http.Request) error {
	select {
	case <-r.ready:
		return nil
	default:
		return errors.New("the configuration is not loaded yet")
	}
}

// Source returns a source for a controller (builder's WatchesRawSource)
// that, each time the configuration of a namespace the resolver has cached
// changes, enqueues every object of list's kind in that namespace, listed
// from c (the manager's cache). list is an empty list of the controller's
// kind, &batchv1.JobList{}. The controller is woken by the change itself,
// after the new configuration is what ForNamespace returns, and needs no
// periodic resync to catch up with one in a cached namespace. A namespace
// no longer cached (more namespaces read since than Options.CacheSize) is
// not woken: its objects get the new configuration at their next event,
// or the manager's SyncPeriod; size the cache to the namespaces whose
// objects must follow every change.
func (r *Resolver[T]) Source(c client.Reader, list client.ObjectList) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		cancel := r.Subscribe(func(ns string, _, _ *namespaced.Snapshot[T]) {
			l := list.DeepCopyObject().(client.ObjectList)
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				return // ctx ended; the manager is stopping
			}
			_ = meta.EachListItem(l, func(obj runtime.Object) error {
				if o, ok := obj.(client.Object); ok {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
				}
				return nil
			})
		})
		go func() {
			<-ctx.Done()
			cancel()
		}()
		return nil
	})
}

// Validator returns an admission validator for objects of type O that
// checks each object against the configuration of its own namespace
// through check: the object is decoded once, by the webhook, and the
// configuration is the namespace's snapshot, read without a lock when it
// is cached. Deletions are not checked.
func Validator[T any, O client.Object](r *Resolver[T], check func(ctx context.Context, obj O, snap *namespaced.Snapshot[T]) (admission.Warnings, error)) admission.Validator[O] {
	return validator[T, O]{r: r, check: check}
}

type validator[T any, O client.Object] struct {
	r     *Resolver[T]
	check func(ctx context.Context, obj O, snap *namespaced.Snapshot[T]) (admission.Warnings, error)
}

func (v validator[T, O]) ValidateCreate(ctx context.Context, obj O) (admission.Warnings, error) {
	snap, err := v.r.snapshotOf(ctx, obj)
	if err != nil {
		return nil, err
	}
	return v.check(ctx, obj, snap)
}

func (v validator[T, O]) ValidateUpdate(ctx context.Context, _, obj O) (admission.Warnings, error) {
	return v.ValidateCreate(ctx, obj)
}

func (v validator[T, O]) ValidateDelete(context.Context, O) (admission.Warnings, error) {
	return nil, nil
}

// snapshotOf returns the configuration of the namespace of obj, the
// object being admitted (or the request's namespace when the object does
// not say), once the resolver is ready.
func (r *Resolver[T]) snapshotOf(ctx context.Context, obj client.Object) (*namespaced.Snapshot[T], error) {
	ns := obj.GetNamespace()
	if req, err := admission.RequestFromContext(ctx); err == nil && ns == "" {
		ns = req.Namespace
	}
	if ns == "" {
		return nil, errors.New("stratacr: the object has no namespace")
	}
	return r.snapshot(ctx, ns)
}

// CacheByObject returns the entries of cache.Options.ByObject that keep a
// manager's ConfigMap cache to what a resolver with options o reads: every
// ConfigMap of o.Namespace (the cluster and selector ConfigMaps, which
// the operator owns), and elsewhere only those that carry o.Labels. Any
// tenant can create ConfigMaps; caching them all, as a manager does by
// default, lets any tenant grow the operator's memory without bound. Other
// controllers of the manager that need other ConfigMaps must read them
// with a client that does not go through this cache.
//
// The ConfigMaps are cached slim: without their managed fields and
// kubectl's last-applied-configuration annotation, a second copy of their
// data, neither of which a resolver reads. Outside o.Namespace, a
// labelled ConfigMap of a name no namespace layer has (o's
// NamespaceConfigMaps, or its Parsed sections') is cached as its identity
// alone (name, namespace, UID and resourceVersion), without its data,
// labels and annotations: the label alone is no bound, since a tenant can
// put it on any number of ConfigMaps, and the resolver reads none of
// them. This transform replaces, for ConfigMaps, any
// cache.Options.DefaultTransform; and an Update made from an object read
// through this cache would drop what it left out on the server, one more
// reason for other controllers to read ConfigMaps elsewhere.
func CacheByObject[T any](o namespaced.Options[T]) map[client.Object]cache.ByObject {
	layers := layerNames(o)
	return map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{
				o.Namespace:         {LabelSelector: labels.Everything()},
				cache.AllNamespaces: {LabelSelector: labels.SelectorFromSet(o.Labels)},
			},
			Transform: func(obj any) (any, error) {
				cm, ok := obj.(*corev1.ConfigMap)
				if !ok {
					return obj, nil
				}
				if cm.Namespace != o.Namespace && !slices.Contains(layers, cm.Name) {
					return &corev1.ConfigMap{TypeMeta: cm.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace,
						UID: cm.UID, ResourceVersion: cm.ResourceVersion}}, nil
				}
				cm.ManagedFields = nil
				delete(cm.Annotations, corev1.LastAppliedConfigAnnotation)
				return cm, nil
			},
		},
	}
}

// layerNames returns the names a namespace layer of o may have: its
// NamespaceConfigMaps, or its Parsed sections'.
func layerNames[T any](o namespaced.Options[T]) []string {
	layers := slices.Clone(o.NamespaceConfigMaps)
	if o.Parsed != nil {
		for _, s := range o.Parsed.Sections {
			layers = append(layers, s.NamespaceConfigMap)
		}
	}
	return layers
}

// ClientReader adapts a controller-runtime client.Reader (a manager's
// cache) to namespaced.Reader. Lists are read without a deep copy: the
// resolver never changes what it reads.
func ClientReader(c client.Reader) namespaced.Reader { return clientReader{c} }

type clientReader struct{ c client.Reader }

func (r clientReader) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := r.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return cm, nil
}

func (r clientReader) ConfigMaps(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	var list corev1.ConfigMapList
	if err := r.c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// configMapIndex holds the ConfigMaps the manager's informer delivers
// that the resolver reads (every one of its own namespace, elsewhere
// those of a layer's name), by namespace, kept by the resolver's own
// event handler. A resolve reads a
// namespace's ConfigMaps from it with a map lookup: through the
// manager's cache, each read pays a REST mapping (apiutil.IsObjectNamespaced,
// for a cache of one kind in several namespace configurations, as
// CacheByObject's is) and a reflective copy into a list, most of a cold
// webhook call's time. It holds the cache's own objects, never copies,
// and serves only from the time the handler has replayed the informer's
// contents until Start returns; the cache serves otherwise. Like any
// handler it may trail the cache by an event, which then reads the
// namespace again.
type configMapIndex struct {
	mu      sync.RWMutex
	byNS    map[string][]*corev1.ConfigMap
	serving bool // guarded by mu, so that a read sees it with what it guards
	// own is the resolver's namespace, whose ConfigMaps are all held;
	// elsewhere only those of a layer's name (layers) are, so that a
	// namespace holds no more than its layers however many ConfigMaps
	// its tenant labels, and an event costs a scan of those alone.
	own    string
	layers []string
}

// put adds or replaces obj, a ConfigMap, by namespace and name; anything
// else (a Namespace), or a ConfigMap the index does not hold, it leaves
// alone.
func (x *configMapIndex) put(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm.Namespace != x.own && !slices.Contains(x.layers, cm.Name) {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	cms := x.byNS[cm.Namespace]
	for i, have := range cms {
		if have.Name == cm.Name {
			cms[i] = cm
			return
		}
	}
	x.byNS[cm.Namespace] = append(cms, cm)
}

// del removes obj, a ConfigMap or the last state of a deleted one.
func (x *configMapIndex) del(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	cms := slices.DeleteFunc(x.byNS[cm.Namespace], func(have *corev1.ConfigMap) bool { return have.Name == cm.Name })
	if len(cms) == 0 {
		delete(x.byNS, cm.Namespace)
		return
	}
	x.byNS[cm.Namespace] = cms
}

// serve starts serving what the index holds.
func (x *configMapIndex) serve() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.serving = true
}

// stop stops serving and forgets what the index held: reads go to the
// cache, which outlives the resolver's handler.
func (x *configMapIndex) stop() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.serving = false
	clear(x.byNS)
}

// list returns the ConfigMaps of namespace that sel matches, and whether
// the index serves.
func (x *configMapIndex) list(namespace string, sel labels.Selector) ([]*corev1.ConfigMap, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.serving {
		return nil, false
	}
	var out []*corev1.ConfigMap
	for _, cm := range x.byNS[namespace] {
		if sel.Matches(labels.Set(cm.Labels)) {
			out = append(out, cm)
		}
	}
	return out, true
}

// indexedReader is clientReader with a namespace's ConfigMaps read from
// index while it serves.
type indexedReader struct {
	clientReader
	index *configMapIndex
}

func (r indexedReader) ConfigMaps(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	if cms, ok := r.index.list(namespace, sel); ok {
		return cms, nil
	}
	return r.clientReader.ConfigMaps(ctx, namespace, sel)
}

func (r clientReader) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	n := &corev1.Namespace{}
	err := r.c.Get(ctx, types.NamespacedName{Name: name}, n)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return n.Labels, nil
}
