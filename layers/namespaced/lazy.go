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
	"k8s.io/apimachinery/pkg/util/resourceversion"
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
	// epoch counts the times the server's versions went back: a list
	// begun in an earlier epoch may hold versions newer than the server's
	// now, and is dropped.
	epoch atomic.Uint64
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
			m.relist(*q, cm.Namespace)
		}
		return
	}
	m.st.changed(obj)
}

// first lists the namespace layers of ns into its record.
func (m *lazyMode[T]) first(ctx context.Context, ns string, hold func(func(*record[T]) bool)) error {
	if m.c.system(ns) {
		return nil
	}
	epoch := m.epoch.Load()
	own, rv, err := m.list(ctx, ns)
	if err != nil {
		return err
	}
	hold(m.listed(own, rv, epoch))
	return nil
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

// listed returns how to put what a list of a namespace begun in epoch
// gave at rv into its record.
func (m *lazyMode[T]) listed(places []*corev1.ConfigMap, rv string, epoch uint64) func(*record[T]) bool {
	return func(rec *record[T]) bool {
		if m.epoch.Load() != epoch {
			return false // the server's versions went back since: listed again
		}
		rec.writable(len(places))
		changed := false
		for i, cm := range places {
			changed = rec.take(i, cm, rv, true) || changed
		}
		return changed
	}
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

// list reads the namespace layers of ns, slimmed, at their places, and
// the version they are at, listPage ConfigMaps per request.
func (m *lazyMode[T]) list(ctx context.Context, ns string) ([]*corev1.ConfigMap, string, error) {
	var own []*corev1.ConfigMap
	o := m.listOptions(metav1.ListOptions{Limit: listPage})
	for {
		list, err := m.client.CoreV1().ConfigMaps(ns).List(ctx, o)
		if err != nil {
			return nil, "", fmt.Errorf("reading the ConfigMaps of namespace %s: %w", ns, err)
		}
		for i := range list.Items {
			if cm := &list.Items[i]; m.c.isNamespaceLayer(cm) {
				own = append(own, slim(cm))
			}
		}
		if list.Continue == "" {
			return m.c.ownConfigMaps(own), list.ResourceVersion, nil
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
			now = slim(cm)
		}
		i, n := slices.Index(m.c.ownCMs, cm.Name), len(m.c.ownCMs)
		m.st.hold(cm.Namespace, func(rec *record[T]) bool {
			rec.writable(n)
			return rec.take(i, now, cm.ResourceVersion, false)
		}, true)
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
		m.epoch.Add(1)
		m.st.each(func(_ string, rec *record[T]) { rec.versions = nil })
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
	if st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == metav1.CauseTypeResourceVersionTooLarge {
			return true
		}
	}
	return false
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
		m.relist(q, ns)
	}
	n := len(todo)
	if n > 0 {
		m.c.log.Info("Listing the cached namespaces again", "namespaces", n)
	}
}

// relist queues ns on q for a relist.
func (m *lazyMode[T]) relist(q relistQueue, ns string) {
	m.st.relistQueued(ns)
	q.Add(ns)
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
		seq := m.st.relistTaken(ns)
		if m.st.cache.get(ns) == nil { // no longer cached
			q.Forget(ns)
			m.st.relistDone(ns, seq)
			q.Done(ns)
			continue
		}
		epoch := m.epoch.Load()
		lctx, cancel := context.WithTimeout(ctx, relistTimeout)
		own, rv, err := m.list(lctx, ns)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			m.c.log.V(2).Info("Listing namespace ConfigMaps failed; retrying", "namespace", ns, "err", err, "failures", q.NumRequeues(ns)+1)
			q.AddRateLimited(ns) // still owed: WaitForSubscribers waits for it
		case err == nil:
			q.Forget(ns)
			m.st.hold(ns, m.listed(own, rv, epoch), true)
			m.st.relistDone(ns, seq)
			if m.relisted != nil {
				m.relisted(ns, rv)
			}
		}
		q.Done(ns)
	}
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
