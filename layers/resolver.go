package layers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
)

// Mode is how a Resolver reads namespace ConfigMaps.
type Mode string

const (
	// Lazy reads a namespace's ConfigMaps on its first resolve and then
	// watches that namespace alone, while the namespace stays in the
	// LRU cache. Start-up lists nothing cluster-wide.
	Lazy Mode = "lazy"
	// Informer keeps one label-filtered, cluster-wide ConfigMap informer:
	// a warm cache, for operators who can grant cluster-wide list and
	// watch.
	Informer Mode = "informer"
	// Stateless reads every layer with direct GETs on each call and
	// caches nothing, for admission webhooks.
	Stateless Mode = "stateless"
)

// DefaultCacheSize is the default number of namespaces a Resolver caches.
const DefaultCacheSize = 1000

// DefaultSelectorAnnotation holds the namespace label selector of a
// selector ConfigMap.
const DefaultSelectorAnnotation = "config.strata.dev/namespace-selector"

// ResolverOptions configure a Resolver. T is the hub type of the configuration, a
// pointer such as *config.JobDefaults.
type ResolverOptions[T runtime.Object] struct {
	// Name names the component in Events and logs.
	Name   string
	Client kubernetes.Interface
	// Namespace is the component's own namespace: it holds the cluster
	// and selector ConfigMaps, and gets no namespace layer.
	Namespace string
	// ClusterConfigMap is the name of the cluster ConfigMap.
	ClusterConfigMap string
	// NamespaceConfigMaps are the names of the ConfigMaps a namespace may
	// own, applied in this order.
	NamespaceConfigMaps []string
	// Labels must all be present on a namespace ConfigMap; one that
	// lacks any is ignored.
	Labels map[string]string
	// Mode is Lazy when empty.
	Mode Mode
	// CacheSize bounds the namespaces cached; DefaultCacheSize when 0.
	CacheSize int
	Tenancy   Tenancy
	// Selectors, when set, enables selector layers.
	Selectors *Selectors

	Codec *scheme.Codec
	// Version is the version ConfigMap keys are expressed in; the codec's
	// preferred version when empty.
	Version schema.GroupVersion
	// Fields holds the markers of Version's type.
	Fields *validation.Fields
	// Validate validates the hub object; nil means no validation.
	Validate func(T) field.ErrorList
	// Flags, when set, is the top layer: command-line values above every
	// ConfigMap.
	Flags *merge.Layer
	// StartOnDefaults starts on defaults when the cluster ConfigMap is
	// invalid at start-up, instead of failing Start.
	StartOnDefaults bool

	// Recorder records Events on invalid ConfigMaps; when nil, Start
	// creates one that writes through Client.
	Recorder record.EventRecorder
	Metrics  *ResolverMetrics
	Logger   *klog.Logger
}

// Selectors configures selector layers: ConfigMaps in the component's
// namespace carrying Labels, whose Annotation holds a namespace label
// selector ("team=payments,tier in (gold)"). They apply to every namespace
// the selector matches, above the cluster layer and below the namespace's
// own ConfigMaps, fewest selector terms first, then oldest, then by name.
type Selectors struct {
	Labels map[string]string
	// Annotation is DefaultSelectorAnnotation when empty.
	Annotation string
}

// Resolver turns the cluster ConfigMap, selector ConfigMaps and namespace
// ConfigMaps into one typed Snapshot per namespace, kept current by watches.
// ForNamespace is safe for concurrent use; on a cached namespace it takes no
// lock and allocates nothing.
type Resolver[T runtime.Object] struct {
	o           ResolverOptions[T]
	m           *ResolverMetrics
	log         klog.Logger
	recorder    record.EventRecorder
	stopRec     func()
	schema      *merge.Schema
	decoder     *decoder[T]
	nsLabels    labels.Selector // the required labels of namespace ConfigMaps
	selectorCMs labels.Selector // the labels of selector ConfigMaps; nil without selector layers

	cache *nsCache[T]
	tick  atomic.Uint64 // advanced on every insertion; entries keep the tick of their last use

	mu        sync.Mutex // serialises every change below and every cache write
	cluster   *clusterState[T]
	base      *Snapshot[T] // shared by namespaces with no layer of their own
	selectors []*selectorLayer
	reported  map[string]string // namespace/name of an ignored ConfigMap → resourceVersion reported
	informers informerSet

	objMu      sync.Mutex
	objCluster *clusterState[T] // the cluster ConfigMap ResolveObjects parsed last

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// entry is one cached namespace.
type entry[T runtime.Object] struct {
	snap atomic.Pointer[Snapshot[T]]
	used atomic.Uint64
	// ns and hash are the namespace and its hash in the cache, set when
	// the entry is put there.
	ns   string
	hash uint64
	// cms are the namespace's own ConfigMaps by name (lazy mode), and
	// cancel stops its watch; both are guarded by Resolver.mu.
	cms    map[string]*corev1.ConfigMap
	cancel context.CancelFunc
}

// clusterState is the cluster ConfigMap in effect.
type clusterState[T runtime.Object] struct {
	cm     *corev1.ConfigMap // nil: absent, defaults apply
	layer  *merge.Layer
	policy *clusterPolicy
	stack  *stack[T] // the cluster layer merged and decoded
}

// selectorLayer is one selector ConfigMap.
type selectorLayer struct {
	cm       *corev1.ConfigMap
	layer    *merge.Layer
	selector labels.Selector
	terms    int
	err      error // invalid: ignored wherever it matches
}

// ignoredLayer is a layer left out as a whole.
type ignoredLayer struct {
	cm   *corev1.ConfigMap
	kind string
	err  error
}

// NewResolver checks o and returns a resolver; Start starts it.
func NewResolver[T runtime.Object](o ResolverOptions[T]) (*Resolver[T], error) {
	var errs []string
	if o.Codec == nil || o.Fields == nil {
		errs = append(errs, "Codec and Fields are required")
	}
	if o.Namespace == "" || o.ClusterConfigMap == "" {
		errs = append(errs, "Namespace and ClusterConfigMap are required")
	}
	if len(o.NamespaceConfigMaps) == 0 {
		errs = append(errs, "NamespaceConfigMaps must name at least one ConfigMap")
	}
	if len(o.Labels) == 0 {
		errs = append(errs, "Labels must name at least one label: namespace ConfigMaps are found by them")
	}
	switch o.Mode {
	case "":
		o.Mode = Lazy
	case Lazy, Informer, Stateless:
	default:
		errs = append(errs, fmt.Sprintf("unknown mode %q", o.Mode))
	}
	if o.Selectors != nil && len(o.Selectors.Labels) == 0 {
		errs = append(errs, "Selectors.Labels must name at least one label")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("layers: resolver options: %s", strings.Join(errs, "; "))
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Version.Empty() {
		o.Version = o.Codec.Preferred()
	}
	if o.Selectors != nil && o.Selectors.Annotation == "" {
		s := *o.Selectors
		s.Annotation = DefaultSelectorAnnotation
		o.Selectors = &s
	}
	r := &Resolver[T]{
		o:        o,
		m:        o.Metrics,
		schema:   o.Fields.Schema(),
		cache:    newNSCache[T](),
		decoder:  &decoder[T]{codec: o.Codec, into: o.Version, schema: o.Fields.Schema(), validate: o.Validate},
		nsLabels: labels.SelectorFromSet(o.Labels),
		reported: map[string]string{},
		recorder: o.Recorder,
		stopRec:  func() {},
	}
	if o.Selectors != nil {
		r.selectorCMs = labels.SelectorFromSet(o.Selectors.Labels)
	}
	if r.m == nil {
		r.m = NewResolverMetrics("strata_unregistered")
	}
	if o.Logger != nil {
		r.log = *o.Logger
	} else {
		r.log = klog.Background().WithName("strata-resolver")
	}
	return r, nil
}

// Start reads the cluster ConfigMap (and, as configured, starts the
// selector, namespace and ConfigMap informers) and waits until they are in
// sync. An invalid cluster ConfigMap fails Start unless StartOnDefaults is
// set. In Lazy mode nothing is listed cluster-wide. Stop releases
// everything Start began.
func (r *Resolver[T]) Start(ctx context.Context) error {
	if r.o.Client == nil {
		return errors.New("layers: resolver: Client is required to start; use ResolveObjects without a cluster")
	}
	r.ctx, r.cancel = context.WithCancel(ctx)
	if r.recorder == nil {
		b := record.NewBroadcaster(record.WithContext(r.ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.o.Client.CoreV1().Events("")})
		r.recorder = b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: r.o.Name})
		r.stopRec = b.Shutdown
	}
	if r.o.Mode == Stateless {
		return nil
	}
	if err := r.startInformers(); err != nil {
		r.Stop()
		return err
	}
	cm, err := r.informers.clusterConfigMap(r.o.ClusterConfigMap)
	if err != nil {
		r.Stop()
		return err
	}
	state, base, err := r.parseCluster(cm)
	if err != nil {
		if !r.o.StartOnDefaults {
			r.Stop()
			return err
		}
		r.refused(cm, KindCluster, err)
		state, base, err = r.parseCluster(nil)
		if err != nil {
			r.Stop()
			return err
		}
	}
	r.mu.Lock()
	r.selectors = r.readSelectors(r.informers.selectorConfigMaps())
	r.setCluster(state, base)
	r.mu.Unlock()
	return r.addHandlers()
}

// Stop stops every watch and informer and waits for them.
func (r *Resolver[T]) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.informers.shutdown()
	r.wg.Wait()
	r.stopRec()
}

// ForNamespace returns the snapshot of namespace ns. A cached namespace is
// served with no lock and no allocation; otherwise the snapshot is built
// (in Lazy mode with one scoped read of the namespace's ConfigMaps, after
// which a watch keeps it current) and cached, evicting the least recently
// used namespace when the cache is full. The error is about reading the
// cluster; invalid tenant input never fails a resolve.
func (r *Resolver[T]) ForNamespace(ctx context.Context, ns string) (*Snapshot[T], error) {
	if e := r.cache.get(ns); e != nil {
		if s := e.snap.Load(); s != nil {
			if t := r.tick.Load(); e.used.Load() != t {
				e.used.Store(t)
			}
			return s, nil
		}
	}
	return r.miss(ctx, ns)
}

func (r *Resolver[T]) miss(ctx context.Context, ns string) (*Snapshot[T], error) {
	start := time.Now()
	defer func() { r.m.latency.Observe(time.Since(start).Seconds()) }()
	r.m.misses.Inc()
	if r.o.Mode == Stateless {
		return r.resolveDirect(ctx, ns)
	}
	for {
		r.mu.Lock()
		cluster := r.cluster
		r.mu.Unlock()
		if cluster == nil {
			return nil, errors.New("layers: resolver not started")
		}
		fetch := r.o.Mode == Lazy && r.wantsNamespaceLayers(cluster, ns)
		var list *corev1.ConfigMapList
		if fetch {
			var err error
			list, err = r.o.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: r.nsLabels.String()})
			if err != nil {
				return nil, fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
			}
		}
		r.mu.Lock()
		if e := r.cache.get(ns); e != nil && e.snap.Load() != nil {
			r.mu.Unlock()
			return e.snap.Load(), nil
		}
		if r.o.Mode == Lazy && r.wantsNamespaceLayers(r.cluster, ns) != fetch {
			r.mu.Unlock() // the gate moved while we read: read again
			continue
		}
		e := &entry[T]{cms: map[string]*corev1.ConfigMap{}}
		if list != nil {
			e.cms = r.ownConfigMaps(pointers(list.Items))
		}
		s := r.rebuild(ns, e)
		e.used.Store(r.tick.Add(1))
		r.cache.put(ns, e)
		if fetch {
			wctx, cancel := context.WithCancel(r.ctx)
			e.cancel = cancel
			r.wg.Add(1)
			r.m.watches.Inc() // counted from now; the watch decrements it when it ends
			go r.watchNamespace(wctx, ns, e, list.ResourceVersion)
		}
		r.evict(ns)
		r.m.cacheSize.Set(float64(r.cache.n))
		r.mu.Unlock()
		return s, nil
	}
}

// wantsNamespaceLayers reports whether namespace ns reads its own
// ConfigMaps under cluster's policy.
func (r *Resolver[T]) wantsNamespaceLayers(cluster *clusterState[T], ns string) bool {
	return cluster.policy.open && !r.o.Tenancy.system(ns, r.o.Namespace)
}

// evict removes least recently used namespaces, other than keep, until the
// cache fits. Called with mu held.
func (r *Resolver[T]) evict(keep string) {
	for r.cache.n > r.o.CacheSize {
		victim, oldest := "", uint64(0)
		r.cache.each(func(ns string, e *entry[T]) {
			if u := e.used.Load(); ns != keep && (victim == "" || u < oldest) {
				victim, oldest = ns, u
			}
		})
		if victim == "" {
			return
		}
		r.remove(victim)
		r.m.evictions.Inc()
	}
}

// remove drops ns from the cache and stops its watch. Called with mu held.
func (r *Resolver[T]) remove(ns string) {
	if e := r.cache.get(ns); e != nil && e.cancel != nil {
		e.cancel()
	}
	r.cache.del(ns)
}

// flush drops every cached namespace and stops every watch. Called with mu
// held.
func (r *Resolver[T]) flush() {
	r.cache.each(func(_ string, e *entry[T]) {
		if e.cancel != nil {
			e.cancel()
		}
	})
	r.cache.clear()
	r.m.cacheSize.Set(0)
}

// rebuild builds and publishes the snapshot of a cached namespace from its
// current layers. Called with mu held.
func (r *Resolver[T]) rebuild(ns string, e *entry[T]) *Snapshot[T] {
	in := inputs[T]{cluster: r.cluster, selectors: r.selectors, system: r.o.Tenancy.system(ns, r.o.Namespace)}
	if r.o.Selectors != nil {
		in.labels = r.informers.namespaceLabels(ns)
	}
	if r.o.Mode == Informer {
		in.cms = r.ordered(r.ownConfigMaps(r.informers.namespaceConfigMaps(ns)))
	} else {
		in.cms = r.ordered(e.cms)
	}
	s, ignored, err := r.build(in)
	if err != nil {
		// The cluster layer decoded when it was applied, and every
		// other layer is optional; this is a defect, not input.
		r.log.Error(err, "Resolving a namespace failed; keeping its previous snapshot", "namespace", ns)
		return e.snap.Load()
	}
	r.report(ignored)
	for _, d := range s.Rejected {
		r.m.rejected.WithLabelValues(d.Reason).Inc()
	}
	e.snap.Store(s)
	return s
}

// rebuildAll rebuilds every cached namespace. Called with mu held.
func (r *Resolver[T]) rebuildAll() {
	r.cache.each(func(ns string, e *entry[T]) { r.rebuild(ns, e) })
}

// inputs are the layers of one namespace, before policy.
type inputs[T runtime.Object] struct {
	cluster   *clusterState[T]
	selectors []*selectorLayer
	labels    map[string]string
	cms       []*corev1.ConfigMap // the namespace's own, in NamespaceConfigMaps order
	system    bool
}

// build merges in into a snapshot: cluster, the selector layers that match,
// the namespace's own ConfigMaps (when the gate is open and the namespace
// is not a system namespace), then flags. A selector or namespace layer
// that does not convert, or with which the configuration does not decode or
// validate, is left out as a whole. A namespace with no layer of its own
// shares the base snapshot.
func (r *Resolver[T]) build(in inputs[T]) (*Snapshot[T], []ignoredLayer, error) {
	var optional []*merge.Layer
	var ignored []ignoredLayer
	var owner []ignoredLayer // of each optional layer
	set := labels.Set(in.labels)
	for _, sl := range in.selectors {
		if !sl.selector.Matches(set) {
			continue
		}
		if sl.err != nil {
			ignored = append(ignored, ignoredLayer{cm: sl.cm, kind: KindSelector, err: sl.err})
			continue
		}
		l := *sl.layer
		l.Policy = in.cluster.policy.selector
		optional = append(optional, &l)
		owner = append(owner, ignoredLayer{cm: sl.cm, kind: KindSelector})
	}
	if in.cluster.policy.open && !in.system {
		for _, cm := range in.cms {
			l, err := ConfigMapLayer(cm, KindNamespace, r.schema)
			if err != nil {
				ignored = append(ignored, ignoredLayer{cm: cm, kind: KindNamespace, err: err})
				continue
			}
			l.Policy = in.cluster.policy.tenant
			optional = append(optional, l)
			owner = append(owner, ignoredLayer{cm: cm, kind: KindNamespace})
		}
	}
	if len(optional) == 0 && len(ignored) == 0 && r.base != nil && r.cluster == in.cluster {
		return r.base, nil, nil
	}
	s, err := r.decode(in.cluster, optional)
	if err != nil && len(optional) > 0 {
		// Find the offending layers: add them one at a time.
		var kept []*merge.Layer
		for i, l := range optional {
			if _, err := r.decode(in.cluster, append(slices.Clip(kept), l)); err != nil {
				o := owner[i]
				o.err = fmt.Errorf("%s: ignored: %w", l.Source, err)
				ignored = append(ignored, o)
				continue
			}
			kept = append(kept, l)
		}
		s, err = r.decode(in.cluster, kept)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, ig := range ignored {
		s.Ignored = append(s.Ignored, ig.err)
	}
	return s, ignored, nil
}

// decode merges optional layers and the flags above the cluster layer and
// decodes the result.
func (r *Resolver[T]) decode(cluster *clusterState[T], optional []*merge.Layer) (*Snapshot[T], error) {
	upper := slices.Clip(optional)
	if r.o.Flags != nil {
		upper = append(upper, r.o.Flags)
	}
	return cluster.stack.snapshot(upper)
}

// parseCluster reads the cluster ConfigMap (nil: absent) into a state (its
// layer and the tenant policy it sets) and the snapshot it gives namespaces
// with no layer of their own, which shows that it decodes and validates.
// The error names the ConfigMap.
func (r *Resolver[T]) parseCluster(cm *corev1.ConfigMap) (*clusterState[T], *Snapshot[T], error) {
	st := &clusterState[T]{cm: cm}
	var data map[string]string
	name := r.o.Namespace + "/" + r.o.ClusterConfigMap
	if cm != nil {
		l, err := ConfigMapLayer(cm, KindCluster, r.schema)
		if err != nil {
			return nil, nil, err
		}
		st.layer, data = l, cm.Data
	}
	p, err := r.o.Tenancy.policyFrom(data, r.o.Fields)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster ConfigMap %s: %w", name, err)
	}
	st.policy = p
	var base []*merge.Layer
	if st.layer != nil {
		base = append(base, st.layer)
	}
	var upper []*merge.Layer
	if r.o.Flags != nil {
		upper = append(upper, r.o.Flags)
	}
	var s *Snapshot[T]
	st.stack, s, err = newStack(r.decoder, upper, base...)
	if err != nil {
		if cm == nil {
			return nil, nil, fmt.Errorf("the defaults (no cluster ConfigMap %s): %w", name, err)
		}
		return nil, nil, fmt.Errorf("cluster ConfigMap %s: %w", name, err)
	}
	return st, s, nil
}

// setCluster puts st and its base snapshot in effect. Opening or closing
// the gate flushes every namespace (their layers and watches follow the
// gate); any other change rebuilds every cached snapshot. Called with mu
// held.
func (r *Resolver[T]) setCluster(st *clusterState[T], base *Snapshot[T]) {
	gateMoved := r.cluster != nil && r.cluster.policy.open != st.policy.open
	r.cluster, r.base = st, base
	if gateMoved {
		r.log.Info("Namespace overrides turned", "open", st.policy.open, "flushed", r.cache.n)
		r.flush()
		return
	}
	r.rebuildAll()
}

// applyCluster applies a new version of the cluster ConfigMap (nil:
// deleted). Content equal to what is applied is skipped; an invalid one is
// refused and the last good configuration stays.
func (r *Resolver[T]) applyCluster(cm *corev1.ConfigMap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.cluster
	if cur != nil && (cm == nil) == (cur.cm == nil) && (cm == nil || maps.Equal(cm.Data, cur.cm.Data) && len(cm.BinaryData) == 0) {
		return
	}
	st, base, err := r.parseCluster(cm)
	if err != nil {
		r.refused(cm, KindCluster, err)
		return
	}
	r.setCluster(st, base)
	if cm == nil {
		r.log.Info("Cluster ConfigMap deleted; defaults apply", "configMap", r.o.Namespace+"/"+r.o.ClusterConfigMap)
	} else {
		r.log.Info("Cluster ConfigMap applied", "configMap", cm.Namespace+"/"+cm.Name, "resourceVersion", cm.ResourceVersion)
	}
}

// refused reports a cluster ConfigMap that was not applied.
func (r *Resolver[T]) refused(cm *corev1.ConfigMap, kind string, err error) {
	r.log.Error(err, "Refused an invalid ConfigMap; the last good configuration stays")
	r.m.invalid.WithLabelValues(kind).Inc()
	if cm != nil && r.recorder != nil {
		r.recorder.Eventf(cm, corev1.EventTypeWarning, "InvalidConfiguration", "Not applied, the last good configuration stays: %v", err)
	}
}

// report surfaces each ignored layer once per resourceVersion: a log line,
// a metric and a Warning Event on the ConfigMap. Called with mu held.
func (r *Resolver[T]) report(ignored []ignoredLayer) {
	for _, ig := range ignored {
		key := ig.kind + ":" + ig.cm.Namespace + "/" + ig.cm.Name
		if r.reported[key] == ig.cm.ResourceVersion {
			continue
		}
		r.reported[key] = ig.cm.ResourceVersion
		r.log.Error(ig.err, "Ignoring an invalid ConfigMap", "configMap", ig.cm.Namespace+"/"+ig.cm.Name, "kind", ig.kind)
		r.m.invalid.WithLabelValues(ig.kind).Inc()
		if r.recorder != nil {
			r.recorder.Eventf(ig.cm, corev1.EventTypeWarning, "InvalidConfiguration", "Ignored as a whole: %v", ig.err)
		}
	}
}

// ownConfigMaps keeps, by name, the ConfigMaps that are namespace layers:
// one of NamespaceConfigMaps, carrying every required label.
func (r *Resolver[T]) ownConfigMaps(items []*corev1.ConfigMap) map[string]*corev1.ConfigMap {
	out := map[string]*corev1.ConfigMap{}
	for _, cm := range items {
		if r.isNamespaceLayer(cm) {
			out[cm.Name] = cm
		}
	}
	return out
}

func pointers(items []corev1.ConfigMap) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func (r *Resolver[T]) isNamespaceLayer(cm *corev1.ConfigMap) bool {
	return slices.Contains(r.o.NamespaceConfigMaps, cm.Name) && r.nsLabels.Matches(labels.Set(cm.Labels))
}

// ordered lists cms in NamespaceConfigMaps order.
func (r *Resolver[T]) ordered(cms map[string]*corev1.ConfigMap) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, n := range r.o.NamespaceConfigMaps {
		if cm, ok := cms[n]; ok {
			out = append(out, cm)
		}
	}
	return out
}

// readSelectors parses the selector ConfigMaps and orders them most generic
// first: fewest selector terms, then oldest, then by name. One that does
// not parse is kept, marked invalid, so that the namespaces it names report
// it.
func (r *Resolver[T]) readSelectors(cms []*corev1.ConfigMap) []*selectorLayer {
	if r.o.Selectors == nil {
		return nil
	}
	var out []*selectorLayer
	for _, cm := range cms {
		sl := &selectorLayer{cm: cm, selector: labels.Nothing()}
		text, ok := cm.Annotations[r.o.Selectors.Annotation]
		sel, err := labels.Parse(text)
		switch {
		case !ok:
			sl.err = fmt.Errorf("%s: no %s annotation", ConfigMapSource(cm, KindSelector), r.o.Selectors.Annotation)
		case err != nil:
			sl.err = fmt.Errorf("%s: annotation %s: %w", ConfigMapSource(cm, KindSelector), r.o.Selectors.Annotation, err)
		default:
			sl.selector = sel
			reqs, _ := sel.Requirements()
			sl.terms = len(reqs)
			sl.layer, sl.err = ConfigMapLayer(cm, KindSelector, r.schema)
		}
		out = append(out, sl)
	}
	slices.SortFunc(out, func(a, b *selectorLayer) int {
		if a.terms != b.terms {
			return a.terms - b.terms
		}
		if c := a.cm.CreationTimestamp.Compare(b.cm.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.cm.Name, b.cm.Name)
	})
	return out
}

// resolveDirect is Stateless mode: every layer read with direct GETs.
func (r *Resolver[T]) resolveDirect(ctx context.Context, ns string) (*Snapshot[T], error) {
	c := r.o.Client.CoreV1()
	get := func(namespace, name string) (*corev1.ConfigMap, error) {
		cm, err := c.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, name, err)
		}
		return cm, nil
	}
	var objs []runtime.Object
	cluster, err := get(r.o.Namespace, r.o.ClusterConfigMap)
	if err != nil {
		return nil, err
	}
	if cluster != nil {
		objs = append(objs, cluster)
	}
	if r.o.Selectors != nil {
		list, err := c.ConfigMaps(r.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selectorCMs.String()})
		if err != nil {
			return nil, fmt.Errorf("listing selector ConfigMaps in %s: %w", r.o.Namespace, err)
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
		n, err := c.Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		if err == nil {
			objs = append(objs, n)
		}
	}
	if !r.o.Tenancy.system(ns, r.o.Namespace) {
		for _, name := range r.o.NamespaceConfigMaps {
			cm, err := get(ns, name)
			if err != nil {
				return nil, err
			}
			if cm != nil {
				objs = append(objs, cm)
			}
		}
	}
	return r.resolveObjects(ns, objs, true)
}

// clusterFromObject parses the cluster ConfigMap of ResolveObjects, reusing
// the last one parsed when it holds the same content: a stateless resolve
// reads the cluster ConfigMap on every call, and it seldom changes.
func (r *Resolver[T]) clusterFromObject(cm *corev1.ConfigMap) (*clusterState[T], error) {
	r.objMu.Lock()
	last := r.objCluster
	r.objMu.Unlock()
	if last != nil && sameConfigMap(last.cm, cm) {
		return last, nil
	}
	st, _, err := r.parseCluster(cm)
	if err != nil {
		return nil, err
	}
	r.objMu.Lock()
	r.objCluster = st
	r.objMu.Unlock()
	return st, nil
}

// sameConfigMap reports whether a and b are the same version of the same
// ConfigMap with the same data (nil: absent). Unless they are the same
// object, the data is compared even when the resourceVersions agree:
// objects handed to ResolveObjects need not come from a server.
func sameConfigMap(a, b *corev1.ConfigMap) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID && a.ResourceVersion == b.ResourceVersion &&
		len(a.BinaryData) == 0 && len(b.BinaryData) == 0 && maps.Equal(a.Data, b.Data)
}

// ResolveObjects resolves namespace ns from objects instead of a cluster:
// ConfigMaps (the cluster ConfigMap, selector ConfigMaps and namespace
// ConfigMaps, told apart by namespace, name and labels as the resolver
// would) and Namespaces (their labels, for selectors). It applies the same
// merge and policy as ForNamespace, and needs neither Start nor a Client:
// for dry runs, tools and tests. An invalid cluster ConfigMap is an error.
// As with objects from client-go's caches, the objects must not be changed
// afterwards: the cluster ConfigMap last parsed is kept, and the same
// object seen again is not parsed again.
func (r *Resolver[T]) ResolveObjects(ns string, objs []runtime.Object) (*Snapshot[T], error) {
	return r.resolveObjects(ns, objs, false)
}

func (r *Resolver[T]) resolveObjects(ns string, objs []runtime.Object, events bool) (*Snapshot[T], error) {
	var cluster *corev1.ConfigMap
	var selectorCMs []*corev1.ConfigMap
	own := map[string]*corev1.ConfigMap{}
	in := inputs[T]{system: r.o.Tenancy.system(ns, r.o.Namespace)}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			if o.Name == ns {
				in.labels = o.Labels
			}
		case *corev1.ConfigMap:
			switch {
			case o.Namespace == r.o.Namespace && o.Name == r.o.ClusterConfigMap:
				cluster = o
			case o.Namespace == r.o.Namespace && r.selectorCMs != nil && r.selectorCMs.Matches(labels.Set(o.Labels)):
				selectorCMs = append(selectorCMs, o)
			case o.Namespace == ns && r.isNamespaceLayer(o):
				own[o.Name] = o
			}
		}
	}
	st, err := r.clusterFromObject(cluster)
	if err != nil {
		return nil, err
	}
	in.cluster, in.cms = st, r.ordered(own)
	r.mu.Lock()
	defer r.mu.Unlock()
	in.selectors = r.readSelectors(selectorCMs)
	s, ignored, err := r.build(in)
	if err != nil {
		return nil, err
	}
	if events {
		r.report(ignored)
	}
	return s, nil
}
