package namespaced

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
)

// lazyMode reads a namespace's ConfigMaps on its first resolve, with one
// list scoped to it, and then follows them while the namespace stays
// cached through one watch all cached namespaces share: the ConfigMaps
// that carry the required labels (and, with one layer name, that name),
// cluster-wide, whose events for namespaces not cached are dropped. A
// cached namespace costs no goroutine and no watch of its own. The
// cluster and selector ConfigMaps and the namespaces come from informers.
//
// Each record keeps the newest version of each of its namespace's
// ConfigMaps, whatever the gate (record.take): a list and an event meet
// by resourceVersion (comparable since Kubernetes 1.34, KEP-5504), so
// they apply in any order, and a list and a miss's read of one namespace
// may run at once. A watch that closes resumes from the last version
// seen; one that ends for good (its version expired, 410 Gone, the server
// refused it, or its versions went back) starts again from now after a
// pause that grows while watches keep ending, and every cached namespace
// is listed again through the rate-limited relist queue.
type lazyMode[T any] struct {
	c       *core[T]
	st      *state[T]
	client  kubernetes.Interface
	inf     *informerSet
	relists atomic.Pointer[relistQueue] // nil before the first start
	wg      sync.WaitGroup              // the watch and the relist workers
	// relisted is told of each relist a worker ended (export_test.go).
	relisted func(ns, rv string)
}

type relistQueue = workqueue.TypedRateLimitingInterface[string]

// relistWorkers bounds the lists of namespaces under way at once after the
// shared watch started again.
const relistWorkers = 4

// listPage bounds the ConfigMaps one list request returns: a tenant may
// label as many as it likes.
const listPage = 32

// relistTimeout bounds one relist: a list that hangs fails and is tried
// again.
const relistTimeout = 30 * time.Second

func (m *lazyMode[T]) start(ctx context.Context) (Reader, error) {
	var err error
	if m.inf, err = startInformers(ctx, m.client, m.c, false); err != nil {
		return nil, err
	}
	rv, err := m.now(ctx)
	if err != nil {
		return nil, fmt.Errorf("namespaced: starting the ConfigMap watch: %w", err)
	}
	// The versions may have gone back while stopped (an etcd restore),
	// and no watch of this run says so: records relearn them.
	m.st.wentBack(false)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryPause, retryPauseMost),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: m.c.clock})
	m.relists.Store(&q)
	context.AfterFunc(ctx, q.ShutDown)
	m.wg.Go(func() { m.watch(ctx, rv) })
	for range relistWorkers {
		m.wg.Go(func() { m.relistWorker(ctx, q) })
	}
	return m.inf, nil
}

// started lists again every namespace cached from an earlier run (what
// it holds may have changed while the resolver was stopped) and hands
// the informers' changes to the state.
func (m *lazyMode[T]) started(context.Context) error {
	m.relistAll()
	return m.inf.handle(m.st.changed)
}

func (m *lazyMode[T]) stop() {
	if q := m.relists.Load(); q != nil {
		(*q).ShutDown()
	}
	m.inf.shutdown()
	m.wg.Wait()
}

// invalidate lists again the namespace of a namespace ConfigMap, and
// reads again what any other object feeds.
func (m *lazyMode[T]) invalidate(obj any) {
	if cm, ok := deletedObject(obj).(*corev1.ConfigMap); ok && slices.Contains(m.c.ownCMs, cm.Name) && !m.c.isCluster(cm) {
		if q := m.relists.Load(); q != nil {
			m.st.relist(*q, cm.Namespace)
		}
		return
	}
	m.st.changed(obj)
}

// first lists the namespace layers of ns.
func (m *lazyMode[T]) first(ctx context.Context, ns string) (*listing, error) {
	if m.c.system(ns) {
		return nil, nil
	}
	return m.list(ctx, ns)
}

// listOptions selects the namespace layers: the required labels and, with
// one layer name, that name, so that a tenant's other labelled ConfigMaps
// never reach the resolver.
func (m *lazyMode[T]) listOptions(o metav1.ListOptions) metav1.ListOptions {
	o.LabelSelector = m.c.nsLabels.String()
	if names := m.c.ownCMs; len(names) == 1 {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", names[0]).String()
	}
	return o
}

// list reads the namespace layers of ns, slimmed, at their places, with
// the version they are at, listPage ConfigMaps per request.
func (m *lazyMode[T]) list(ctx context.Context, ns string) (*listing, error) {
	var own []*corev1.ConfigMap
	epoch := m.st.epoch.Load()
	o := m.listOptions(metav1.ListOptions{Limit: listPage})
	for {
		list, err := m.client.CoreV1().ConfigMaps(ns).List(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			if cm := &list.Items[i]; m.c.isNamespaceLayer(cm) {
				own = append(own, slim(cm, nil))
			}
		}
		if list.Continue == "" {
			return &listing{places: m.c.ownConfigMaps(own), rv: list.ResourceVersion, epoch: epoch}, nil
		}
		o.Continue = list.Continue
	}
}

// now returns the resourceVersion of now, learnt at the cost of one
// object: a list of at most one ConfigMap.
func (m *lazyMode[T]) now(ctx context.Context) (string, error) {
	list, err := m.client.CoreV1().ConfigMaps("").List(ctx, m.listOptions(metav1.ListOptions{Limit: 1}))
	if err != nil {
		return "", err
	}
	return list.ResourceVersion, nil
}

// watch runs the shared watch from rv until ctx ends: it resumes from the
// last version seen when a watch closes, and starts again from now after
// a growing pause when one ends for good.
func (m *lazyMode[T]) watch(ctx context.Context, rv string) {
	const first, most = 100 * time.Millisecond, 30 * time.Second
	pause := first
	for {
		began := m.c.clock.Now()
		resume := m.follow(ctx, &rv)
		if ctx.Err() != nil {
			return
		}
		if m.c.clock.Since(began) > 2*most {
			pause = first // it ran a while: not ending at once
		}
		for {
			if !m.sleep(ctx, pause) {
				return
			}
			pause = min(2*pause, most)
			if resume {
				break
			}
			var err error
			if rv, err = m.now(ctx); err == nil {
				m.relistAll()
				break
			}
			m.c.log.V(2).Info("Starting the ConfigMap watch failed; retrying", "err", err, "after", pause)
		}
	}
}

// follow watches from *rv and puts each event into the record of its
// namespace, advancing *rv, until the watch ends. It reports whether the
// watch may resume from *rv: false when it ended for good.
func (m *lazyMode[T]) follow(ctx context.Context, rv *string) (resume bool) {
	w, err := m.client.CoreV1().ConfigMaps("").Watch(ctx, m.listOptions(metav1.ListOptions{ResourceVersion: *rv, AllowWatchBookmarks: true}))
	if err != nil {
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			return m.ended(se.Status())
		}
		m.c.log.V(2).Info("The ConfigMap watch failed; retrying", "err", err)
		return true
	}
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return true
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return true
		}
		if ev.Type == watch.Error {
			st := metav1.Status{Message: fmt.Sprintf("%v", ev.Object)}
			if s, ok := ev.Object.(*metav1.Status); ok {
				st = *s
			}
			return m.ended(st)
		}
		if o, err := meta.Accessor(ev.Object); err == nil && o.GetResourceVersion() != "" {
			*rv = o.GetResourceVersion()
		}
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || ev.Type == watch.Bookmark || !slices.Contains(m.c.ownCMs, cm.Name) {
			continue
		}
		var now *corev1.ConfigMap
		if ev.Type != watch.Deleted && m.c.isNamespaceLayer(cm) {
			now = slim(cm, nil)
		}
		m.st.seen(cm.Namespace, slices.Index(m.c.ownCMs, cm.Name), now, cm.ResourceVersion)
	}
}

// ended logs why the shared watch ended, and reports whether it may
// resume from the version it was at: not when that version expired (410
// Gone), nor when the server's versions went back (etcd restored from a
// snapshot), in which case every version a record holds is forgotten
// first, since every list and event would be older, and dropped as stale.
// Any other error (a throttled or failing server, a refusal) resumes
// after the pause, relisting nothing.
func (m *lazyMode[T]) ended(st metav1.Status) (resume bool) {
	switch {
	case versionsWentBack(st):
		m.c.log.Info("The API server's resource versions went back (etcd restored from a snapshot?); listing every cached namespace again", "message", st.Message)
		m.st.wentBack(true)
		return false
	case st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone:
		m.c.log.Info("The ConfigMap watch expired; starting again from now", "message", st.Message)
		return false
	}
	m.c.log.Info("The ConfigMap watch failed; resuming", "reason", st.Reason, "code", st.Code, "message", st.Message)
	return true
}

// versionsWentBack reports whether st refuses a watch for a version the
// server has not reached: its versions went back. Retrying the same
// version would wait for ever.
func versionsWentBack(st metav1.Status) bool {
	return st.Details != nil && slices.ContainsFunc(st.Details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == metav1.CauseTypeResourceVersionTooLarge
	})
}

// sleep waits d on the resolver's clock and reports false if ctx ended.
func (m *lazyMode[T]) sleep(ctx context.Context, d time.Duration) bool {
	t := m.c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// relistAll queues every cached namespace for a relist: the changes the
// shared watch missed are in the lists.
func (m *lazyMode[T]) relistAll() {
	var todo []string
	m.st.each(func(ns string, _ *record[T]) {
		if !m.c.system(ns) {
			todo = append(todo, ns)
		}
	})
	q := *m.relists.Load()
	for _, ns := range todo {
		m.st.relist(q, ns)
	}
	if len(todo) > 0 {
		m.c.log.Info("Listing the cached namespaces again", "namespaces", len(todo))
	}
}

// relistWorker lists the namespaces q holds, until q shuts down. One
// whose list fails is queued again after a pause that doubles with each
// failure in a row: the worker moves on, and a namespace whose lists keep
// failing holds up no other. The queue never hands out one namespace to
// two workers at once.
func (m *lazyMode[T]) relistWorker(ctx context.Context, q relistQueue) {
	for {
		ns, shutdown := q.Get()
		if shutdown {
			return
		}
		done := m.st.relistTaken(ns)
		if m.st.cache.get(ns) == nil { // no longer cached
			q.Forget(ns)
			done()
			q.Done(ns)
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, relistTimeout)
		l, err := m.list(lctx, ns)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			m.c.log.V(2).Info("Listing namespace ConfigMaps failed; retrying", "namespace", ns, "err", err, "failures", q.NumRequeues(ns)+1)
			q.AddRateLimited(ns) // still owed: WaitForSubscribers waits for it
		case err == nil:
			q.Forget(ns)
			m.st.listed(ns, l)
			done()
			if m.relisted != nil {
				m.relisted(ns, l.rv)
			}
		}
		q.Done(ns)
	}
}
