package namespaced

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Reader reads ConfigMaps, and the labels of Namespaces, from a cache the
// caller keeps. ListerReader adapts client-go listers; strata's
// controller-runtime integration adapts a manager's client.Reader. Its
// methods are called from the goroutines that resolve and that invalidate,
// concurrently.
type Reader interface {
	// ConfigMap returns the ConfigMap namespace/name, or nil and no error
	// when there is none.
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	// ConfigMaps returns the ConfigMaps of namespace that selector
	// matches.
	ConfigMaps(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.ConfigMap, error)
	// NamespaceLabels returns the labels of the namespace name, or nil
	// and no error when there is none. It is called only with selector
	// layers.
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
}

// ListerReader returns a Reader over client-go listers. namespaces may be
// nil when there are no selector layers.
func ListerReader(configMaps corelisters.ConfigMapLister, namespaces corelisters.NamespaceLister) Reader {
	return listerReader{configMaps, namespaces}
}

type listerReader struct {
	cms corelisters.ConfigMapLister
	nss corelisters.NamespaceLister
}

func (l listerReader) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := l.cms.ConfigMaps(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

func (l listerReader) ConfigMaps(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.ConfigMap, error) {
	return l.cms.ConfigMaps(namespace).List(selector)
}

func (l listerReader) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	if l.nss == nil {
		return nil, fmt.Errorf("namespaced: no Namespace lister to read the labels of %s", name)
	}
	n, err := l.nss.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return n.Labels, nil
}

// readerStore is the store of a Reader.
type readerStore[T any] struct {
	c *core[T]
	r Reader
}

func (s readerStore[T]) clusters(ctx context.Context) (map[string]*corev1.ConfigMap, error) {
	out := map[string]*corev1.ConfigMap{}
	for _, name := range s.c.clusterCMs {
		cm, err := s.r.ConfigMap(ctx, s.c.o.Namespace, name)
		if err != nil {
			return nil, err
		}
		if cm != nil {
			out[name] = cm
		}
	}
	return out, nil
}

func (s readerStore[T]) selectors(ctx context.Context) ([]*corev1.ConfigMap, error) {
	if s.c.selectorCMs == nil {
		return nil, nil
	}
	return s.r.ConfigMaps(ctx, s.c.o.Namespace, s.c.selectorCMs)
}

func (s readerStore[T]) own(ctx context.Context, ns string) ([]*corev1.ConfigMap, error) {
	return s.r.ConfigMaps(ctx, ns, s.c.nsLabels)
}

func (s readerStore[T]) labels(ctx context.Context, ns string) (map[string]string, error) {
	if s.c.selectorCMs == nil {
		return nil, nil
	}
	return s.r.NamespaceLabels(ctx, ns)
}

// readerMode reads every ConfigMap through a store: the caller's Reader
// (NewFromReader), or the informers it starts itself (NewInformer). A
// namespace's own ConfigMaps are kept in its entry whether the gate is
// open or not, so that the gate moves without reading anything.
type readerMode[T any] struct {
	c      *core[T]
	st     *state[T]
	client kubernetes.Interface // NewInformer: starts the informers
	reader store                // NewFromReader: the caller's
	inf    *informerSet
	cancel context.CancelFunc
	stopEv func()

	// running is where a started resolver reads, set before it reads the
	// cluster ConfigMaps: a change told through Invalidate from then on
	// (from any goroutine, an informer's, a watcher's) is applied, one
	// told before is read by Start anyway.
	running atomic.Pointer[readerRun]

	// refreshMu keeps the refreshes of namespaces in the order their
	// inputs were read.
	refreshMu sync.Mutex
}

// readerRun is a started resolver's context and store.
type readerRun struct {
	ctx context.Context
	src store
}

func newReaderMode[T any](c *core[T], st *state[T], client kubernetes.Interface, r Reader) *readerMode[T] {
	m := &readerMode[T]{c: c, st: st, client: client, stopEv: func() {}}
	if r != nil {
		m.reader = readerStore[T]{c: c, r: r}
	}
	return m
}

func (m *readerMode[T]) start(ctx context.Context) error {
	ctx, m.cancel = context.WithCancel(ctx)
	events := newEventSink(&m.c.o)
	src := m.reader
	if m.client != nil {
		var err error
		if events == nil {
			if events, m.stopEv, err = startEvents(ctx, m.client, m.c.eventController()); err != nil {
				m.stop()
				return err
			}
		}
		if m.inf, err = startInformers(ctx, m.client, m.c, true); err != nil {
			m.stop()
			return err
		}
		src = m.inf
	}
	m.running.Store(&readerRun{ctx: ctx, src: src})
	if err := m.st.begin(ctx, src, events); err != nil {
		m.stop()
		return err
	}
	if m.inf != nil {
		if err := m.inf.handle(m.invalidate); err != nil {
			m.stop()
			return err
		}
	}
	return nil
}

func (m *readerMode[T]) follower() follower[T] { return current[T]{} }

func (m *readerMode[T]) cluster(context.Context) (clusterView[T], error) {
	return m.st.current()
}

func (m *readerMode[T]) stop() {
	m.running.Store(nil)
	if m.cancel != nil {
		m.cancel()
	}
	m.inf.shutdown()
	m.stopEv()
}

func (m *readerMode[T]) miss(ctx context.Context, ns string) (*Snapshot[T], error) {
	run := m.running.Load()
	if run == nil {
		return nil, errNotStarted
	}
	return m.st.miss(ctx, ns, func(ctx context.Context, ns string, _ *clusterState[T]) (nsInput, error) {
		cms, ls, err := m.read(ctx, run.src, ns)
		return nsInput{cms: cms, labels: ls}, err
	})
}

// read reads namespace ns's own ConfigMaps and labels from src.
func (m *readerMode[T]) read(ctx context.Context, src store, ns string) (map[string]*corev1.ConfigMap, map[string]string, error) {
	var own map[string]*corev1.ConfigMap
	if !m.c.system(ns) {
		cms, err := src.own(ctx, ns)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
		}
		own = m.c.ownConfigMaps(cms)
	}
	ls, err := src.labels(ctx, ns)
	if err != nil {
		return nil, nil, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return own, ls, nil
}

// invalidate reads again what obj (a ConfigMap or a Namespace, or the last
// state of a deleted one) feeds, and puts it in effect.
func (m *readerMode[T]) invalidate(obj any) {
	run := m.running.Load()
	if run == nil {
		return // not started: Start reads what is there
	}
	c := m.c
	switch o := deletedObject(obj).(type) {
	case *corev1.ConfigMap:
		switch {
		case c.isCluster(o):
			m.st.applyCluster(func() (map[string]*corev1.ConfigMap, error) { return run.src.clusters(run.ctx) }, o)
			return
		case o.Namespace == c.o.Namespace && c.selectorCMs != nil:
			cms, err := run.src.selectors(run.ctx)
			if err != nil {
				c.log.Error(err, "Reading the selector ConfigMaps failed")
				return
			}
			m.st.applySelectors(cms)
		}
		m.refresh(run, o.Namespace)
	case *corev1.Namespace:
		m.refresh(run, o.Name)
	}
}

// refresh reads a cached namespace's inputs again and rebuilds it if they
// changed.
func (m *readerMode[T]) refresh(run *readerRun, ns string) {
	m.refreshMu.Lock()
	defer m.refreshMu.Unlock()
	e := m.st.cachedOrTouch(ns) // a miss may have read its inputs before
	if e == nil {
		return
	}
	own, ls, err := m.read(run.ctx, run.src, ns)
	if err != nil {
		m.c.log.Error(err, "Refreshing a namespace failed; keeping its snapshot", "namespace", ns)
		return
	}
	if own == nil {
		own = map[string]*corev1.ConfigMap{}
	}
	m.st.do(func(g *guarded[T]) { g.setInputs(ns, e, own, ls, false) })
}

// Invalidate tells a resolver built with NewFromReader that obj, a
// ConfigMap or a Namespace (or cache.DeletedFinalStateUnknown holding
// one), was added, changed or deleted in the caller's cache: what it feeds
// is read again through the Reader and, if its resourceVersions changed,
// rebuilt, and subscribers are told. Call it after the cache holds the
// change, as an informer's event handlers are. Resolvers that read for
// themselves have no need of it: a Lazy or Direct resolver ignores it, an
// Informer resolver reads again from its own informers.
func (r *Resolver[T]) Invalidate(obj any) { r.src.invalidate(obj) }

// EventHandler returns handlers that call Invalidate, to add to the
// caller's ConfigMap informer (and, with selector layers, its Namespace
// informer) for a resolver built with NewFromReader.
func (r *Resolver[T]) EventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    r.Invalidate,
		UpdateFunc: func(old, obj any) { r.Invalidate(obj) },
		DeleteFunc: r.Invalidate,
	}
}
