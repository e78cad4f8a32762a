package layers

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// informerSet holds the informers a resolver runs: the cluster ConfigMap
// (scoped to its name), and as configured the selector ConfigMaps, the
// namespaces, and the label-filtered cluster-wide namespace ConfigMaps.
type informerSet struct {
	factories  []informers.SharedInformerFactory
	cluster    cache.SharedIndexInformer
	clusterCMs corelisters.ConfigMapNamespaceLister
	selector   cache.SharedIndexInformer
	selectors  corelisters.ConfigMapNamespaceLister
	namespace  cache.SharedIndexInformer
	namespaces corelisters.NamespaceLister
	cm         cache.SharedIndexInformer
	cms        corelisters.ConfigMapLister
}

// startInformers starts the informers and waits for their caches.
func (r *Resolver[T]) startInformers() error {
	s := &r.informers
	c := r.o.Client
	factory := func(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
		f := informers.NewSharedInformerFactoryWithOptions(c, 0, opts...)
		s.factories = append(s.factories, f)
		return f
	}
	own := r.o.Namespace
	f := factory(informers.WithNamespace(own), informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", r.o.ClusterConfigMap).String()
	}))
	s.cluster, s.clusterCMs = f.Core().V1().ConfigMaps().Informer(), f.Core().V1().ConfigMaps().Lister().ConfigMaps(own)
	if r.o.Selectors != nil {
		sel := r.selectorCMs.String()
		f := factory(informers.WithNamespace(own), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
		s.selector, s.selectors = f.Core().V1().ConfigMaps().Informer(), f.Core().V1().ConfigMaps().Lister().ConfigMaps(own)
		nf := factory()
		s.namespace, s.namespaces = nf.Core().V1().Namespaces().Informer(), nf.Core().V1().Namespaces().Lister()
	}
	if r.o.Mode == Informer {
		f := factory(informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = r.nsLabels.String() }))
		s.cm, s.cms = f.Core().V1().ConfigMaps().Informer(), f.Core().V1().ConfigMaps().Lister()
	}
	for _, f := range s.factories {
		f.Start(r.ctx.Done())
	}
	for _, f := range s.factories {
		for typ, ok := range f.WaitForCacheSync(r.ctx.Done()) {
			if !ok {
				return fmt.Errorf("layers: resolver: the %v informer did not sync: %w", typ, context.Cause(r.ctx))
			}
		}
	}
	return nil
}

// addHandlers subscribes to changes once the initial state is in effect;
// the informers replay what they hold, which compares equal and is skipped.
func (r *Resolver[T]) addHandlers() error {
	s := &r.informers
	asConfigMap := func(obj any) *corev1.ConfigMap {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		cm, _ := obj.(*corev1.ConfigMap)
		return cm
	}
	type handler struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}
	handlers := []handler{{s.cluster, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.applyCluster(asConfigMap(obj)) },
		UpdateFunc: func(_, obj any) { r.applyCluster(asConfigMap(obj)) },
		DeleteFunc: func(any) { r.applyCluster(nil) },
	}}}
	if s.selector != nil {
		changed := func(any) { r.selectorsChanged() }
		handlers = append(handlers,
			handler{s.selector, cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed}},
			handler{s.namespace, cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) { r.namespaceChanged(obj) },
				UpdateFunc: func(old, obj any) {
					o, n := old.(*corev1.Namespace), obj.(*corev1.Namespace)
					if !maps.Equal(o.Labels, n.Labels) {
						r.namespaceChanged(obj)
					}
				},
			}})
	}
	if s.cm != nil {
		changed := func(obj any) {
			if cm := asConfigMap(obj); cm != nil {
				r.namespaceChanged(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cm.Namespace}})
			}
		}
		handlers = append(handlers, handler{s.cm, cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed}})
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("layers: resolver: %w", err)
		}
	}
	return nil
}

// selectorsChanged re-reads the selector ConfigMaps and rebuilds every
// cached namespace.
func (r *Resolver[T]) selectorsChanged() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.selectors = r.readSelectors(r.informers.selectorConfigMaps())
	r.rebuildAll()
}

// namespaceChanged rebuilds the namespace obj names, if it is cached.
func (r *Resolver[T]) namespaceChanged(obj any) {
	n, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.cache.get(n.Name); e != nil {
		r.rebuild(n.Name, e)
	}
}

func (s *informerSet) clusterConfigMap(name string) (*corev1.ConfigMap, error) {
	cm, err := s.clusterCMs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

func (s *informerSet) selectorConfigMaps() []*corev1.ConfigMap {
	if s.selectors == nil {
		return nil
	}
	cms, _ := s.selectors.List(labels.Everything())
	return cms
}

func (s *informerSet) namespaceLabels(ns string) map[string]string {
	if s.namespaces == nil {
		return nil
	}
	n, err := s.namespaces.Get(ns)
	if err != nil {
		return nil
	}
	return n.Labels
}

func (s *informerSet) namespaceConfigMaps(ns string) []*corev1.ConfigMap {
	if s.cms == nil {
		return nil
	}
	cms, _ := s.cms.ConfigMaps(ns).List(labels.Everything())
	return cms
}

func (s *informerSet) shutdown() {
	for _, f := range s.factories {
		f.Shutdown()
	}
}

// watchNamespace keeps a lazily cached namespace's ConfigMaps current: a
// watch scoped to the namespace and the required labels, from rv. A watch
// that breaks is resumed from the last version seen, across apiserver
// restarts; one whose version has expired is replaced by a fresh list. It
// ends when ctx is cancelled: on eviction, flush or Stop.
func (r *Resolver[T]) watchNamespace(ctx context.Context, ns string, e *entry[T], rv string) {
	defer r.wg.Done()
	defer r.m.watches.Dec()
	cms := r.o.Client.CoreV1().ConfigMaps(ns)
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = r.nsLabels.String()
		return cms.Watch(ctx, o)
	}}
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		if rv == "" {
			list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: r.nsLabels.String()})
			if err != nil {
				r.log.V(2).Info("Listing namespace ConfigMaps failed; retrying", "namespace", ns, "err", err, "after", delay)
				select {
				case <-ctx.Done():
				case <-time.After(delay):
				}
				delay = min(2*delay, 30*time.Second)
				continue
			}
			delay = 100 * time.Millisecond
			r.setOwn(ns, e, r.ownConfigMaps(pointers(list.Items)))
			rv = list.ResourceVersion
		}
		w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		if err != nil {
			rv = ""
			continue
		}
		r.mu.Lock()
		own := e.cms
		r.mu.Unlock()
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			switch {
			case ev.Type == watch.Error:
				r.log.V(2).Info("Namespace watch ended; listing again", "namespace", ns, "status", apierrors.FromObject(ev.Object))
			case !ok:
			case ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted:
				own = maps.Clone(own)
				if ev.Type == watch.Deleted || !r.isNamespaceLayer(cm) {
					delete(own, cm.Name)
				} else {
					own[cm.Name] = cm
				}
				r.setOwn(ns, e, own)
			}
		}
		w.Stop()
		rv = ""
	}
}

// setOwn puts a namespace's own ConfigMaps in effect, if the entry is
// still cached and they changed.
func (r *Resolver[T]) setOwn(ns string, e *entry[T], own map[string]*corev1.ConfigMap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache.get(ns) != e || sameVersions(e.cms, own) {
		return
	}
	e.cms = own
	r.rebuild(ns, e)
}

func sameVersions(a, b map[string]*corev1.ConfigMap) bool {
	return maps.EqualFunc(a, b, func(x, y *corev1.ConfigMap) bool { return x.ResourceVersion == y.ResourceVersion })
}
