package namespaced

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// lazyMode reads a namespace's ConfigMaps on its first resolve and then
// watches that namespace alone, while it stays cached. The cluster
// ConfigMap, and with selector layers the selector ConfigMaps and the
// namespaces, come from informers.
type lazyMode[T runtime.Object] struct {
	c      *core[T]
	st     *state[T]
	client kubernetes.Interface
	inf    *informerSet
	ctx    context.Context
	cancel context.CancelFunc
	stopEv func()
	wg     sync.WaitGroup // the namespace watches
}

func newLazy[T runtime.Object](c *core[T], st *state[T], client kubernetes.Interface) *lazyMode[T] {
	m := &lazyMode[T]{c: c, st: st, client: client, stopEv: func() {}}
	st.g.watch = m.watch
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
	if err := m.st.begin(m.ctx, m.inf, events); err != nil {
		m.stop()
		return err
	}
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
}

// changed applies a change the informers saw: the cluster ConfigMap, a
// selector ConfigMap, or a namespace's labels.
func (m *lazyMode[T]) changed(obj any) {
	switch o := deletedObject(obj).(type) {
	case *corev1.ConfigMap:
		if m.c.isCluster(o) {
			cm, err := m.inf.cluster(m.ctx)
			if err != nil {
				m.c.log.Error(err, "Reading the cluster ConfigMap failed")
				return
			}
			m.st.applyCluster(cm)
			return
		}
		cms, _ := m.inf.selectors(m.ctx)
		m.st.applySelectors(cms)
	case *corev1.Namespace:
		e := m.st.cache.get(o.Name)
		if e == nil {
			return
		}
		ls, _ := m.inf.labels(m.ctx, o.Name)
		m.st.do(func(g *guarded[T]) { g.setInputs(o.Name, e, e.cms, ls) })
	}
}

func (m *lazyMode[T]) miss(ctx context.Context, ns string) (*Snapshot[T], error) {
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
		list, err := m.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: m.c.nsLabels.String()})
		if err != nil {
			return in, fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
		}
		in.cms, in.watch, in.rv = m.c.ownConfigMaps(pointers(list.Items)), true, list.ResourceVersion
		return in, nil
	})
}

// watch starts the watch of a cached namespace; guarded calls it with the
// state lock held.
func (m *lazyMode[T]) watch(ns string, e *entry[T], rv string) context.CancelFunc {
	ctx, cancel := context.WithCancel(m.ctx)
	m.wg.Add(1)
	m.c.m.watches.Inc() // counted from now; the watch decrements it when it ends
	go m.watchNamespace(ctx, ns, e, rv)
	return cancel
}

// watchNamespace keeps a cached namespace's ConfigMaps current: a watch
// scoped to the namespace and the required labels, from rv ("": list
// first). A watch that breaks is resumed from the last version seen,
// across apiserver restarts; one whose version has expired is replaced by
// a fresh list. It ends when ctx is cancelled: on eviction, when the gate
// closes, or on Stop.
func (m *lazyMode[T]) watchNamespace(ctx context.Context, ns string, e *entry[T], rv string) {
	defer m.wg.Done()
	defer m.c.m.watches.Dec()
	cms := m.client.CoreV1().ConfigMaps(ns)
	sel := m.c.nsLabels.String()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = sel
		return cms.Watch(ctx, o)
	}}
	set := func(own map[string]*corev1.ConfigMap) {
		m.st.do(func(g *guarded[T]) { g.setInputs(ns, e, own, e.labels) })
	}
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		listed := false
		if rv == "" {
			list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				m.c.log.V(2).Info("Listing namespace ConfigMaps failed; retrying", "namespace", ns, "err", err, "after", delay)
				select {
				case <-ctx.Done():
				case <-time.After(delay):
				}
				delay = min(2*delay, 30*time.Second)
				continue
			}
			delay = 100 * time.Millisecond
			set(m.c.ownConfigMaps(pointers(list.Items)))
			rv, listed = list.ResourceVersion, true
		}
		var w watch.Interface
		var err error
		if rv == "" {
			// A list with no resourceVersion (client-go's fake
			// clientset gives none): a plain watch, and a list again
			// when it ends, since there is no version to resume from.
			w, err = cms.Watch(ctx, metav1.ListOptions{LabelSelector: sel})
		} else {
			w, err = watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		}
		if err != nil {
			if listed {
				select { // do not list again at once: the watch is what failed
				case <-ctx.Done():
				case <-time.After(delay):
				}
				delay = min(2*delay, 30*time.Second)
			}
			rv = ""
			continue
		}
		var own map[string]*corev1.ConfigMap
		m.st.do(func(*guarded[T]) { own = e.cms })
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			switch {
			case ev.Type == watch.Error:
				m.c.log.V(2).Info("Namespace watch ended; listing again", "namespace", ns, "status", apierrors.FromObject(ev.Object))
			case !ok:
			case ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted:
				own = maps.Clone(own)
				if ev.Type == watch.Deleted || !m.c.isNamespaceLayer(cm) {
					delete(own, cm.Name)
				} else {
					own[cm.Name] = cm
				}
				set(own)
			}
		}
		w.Stop()
		rv = ""
	}
}
