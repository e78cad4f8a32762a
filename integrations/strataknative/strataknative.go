// Package strataknative runs a strata namespaced resolver in a knative
// project (knative.dev/pkg: Serving, Eventing, Tekton): the cluster
// ConfigMaps come from the configmap.Watcher the controller runs already,
// so that they are not watched twice, and the configuration of an
// object's namespace goes into the project's own context, where its
// readers (FromContextOrDefaults) find it unchanged: one call at each
// entry.
//
//	r, err := strataknative.New(kubeclient.Get(ctx), cmw, opts) // in the controller's constructor
//	go start(ctx, r) // r.Start waits until sharedmain has started cmw; call it again while it fails
//
// A namespace's ConfigMaps are read on its first use and then followed
// (namespaced.NewLazy): start-up lists no tenant's ConfigMaps.
//
//	// a reconciler's entry, put being the project's ToContext over a snapshot:
//	ctx, err = strataknative.IntoContext(ctx, r, obj.Namespace, put)
//
//	// a webhook's admission controller:
//	impl := defaulting.NewAdmissionController(ctx, name, path, types, strataknative.WrapContext(store.ToContext, put), true)
//	impl.Reconciler = strataknative.Admission(r, impl.Reconciler)
//
// It is a module of its own, so that strata's go.mod never requires
// knative.
package strataknative

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/configmap/informer"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"
	"knative.dev/pkg/system"
	"knative.dev/pkg/webhook"

	"github.com/stratacfg/strata/layers/namespaced"
)

// Resolver is a namespaced resolver wired into a knative controller: its
// cluster ConfigMaps are those the controller's configmap.Watcher
// delivers; a namespace's ConfigMaps are read on its first use, with one
// list scoped to it, and then followed through the one label-filtered
// watch every cached namespace shares (namespaced.NewLazy), so start-up
// lists no tenant's ConfigMaps however many there are.
type Resolver[T any] struct {
	*namespaced.Resolver[T]
	cluster *clusterReader
	kc      kubernetes.Interface
	ns      string

	mu       sync.Mutex
	cancel   context.CancelFunc // stops what Start began; nil before Start
	starting sync.WaitGroup     // a Start under way
	stopped  bool               // Stop was called: Start refuses
}

// New returns a resolver of o over kc whose cluster ConfigMaps are what w
// delivers. It registers its observers on w, so call it where a knative
// controller is constructed, before sharedmain starts w; when w can watch
// with a default (knative's InformedWatcher), a cluster ConfigMap that does
// not exist is an empty one. knative keeps one default a name, the last
// registered: a controller that gives a cluster ConfigMap a default of
// its own (WatchWithDefault) registers it after New, and the resolver
// reads that default where the ConfigMap does not exist, as the
// controller's readers do. Start it in any order with w: Start waits,
// within its context, until w has delivered every cluster ConfigMap that
// exists and that w sees (with SYSTEM_RESOURCE_LABEL set, sharedmain's
// watcher sees only those that carry the label). It needs list and watch
// on ConfigMaps cluster-wide, as NewLazy does, and get in o.Namespace.
func New[T any](kc kubernetes.Interface, w configmap.Watcher, o namespaced.Options[T]) (*Resolver[T], error) {
	if ns, ok := watcherNamespace(w); ok && ns != o.Namespace {
		return nil, fmt.Errorf("strataknative: the configmap.Watcher watches namespace %s, the options name %s: the cluster ConfigMaps would never arrive", ns, o.Namespace)
	}
	_, defaulting := w.(configmap.DefaultingWatcher)
	r := &Resolver[T]{kc: kc, ns: o.Namespace, cluster: &clusterReader{cms: map[string]*corev1.ConfigMap{}, seen: map[string]bool{}, delivered: make(chan struct{}), defaulting: defaulting}}
	for _, name := range clusterNames(o) {
		if !slices.Contains(r.cluster.names, name) {
			r.cluster.names = append(r.cluster.names, name)
		}
	}
	o.Cluster = r.cluster
	inner, err := namespaced.NewLazy(kc, o)
	if err != nil {
		return nil, err
	}
	r.Resolver = inner
	for _, name := range r.cluster.names {
		observe := func(cm *corev1.ConfigMap) {
			if cm.Namespace != o.Namespace {
				return // not ours: a watcher delivers only its own namespace's
			}
			r.cluster.set(name, cm, cm.Annotations[defaultMark] == "")
			inner.Invalidate(cm)
		}
		if dw, ok := w.(configmap.DefaultingWatcher); ok {
			dw.WatchWithDefault(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name,
				Annotations: map[string]string{defaultMark: "true"}}}, observe)
		} else {
			w.Watch(name, observe)
		}
	}
	return r, nil
}

// Start waits until the watcher has delivered every cluster ConfigMap as
// it is (not the empty default knative's watcher delivers first for one
// that may exist: that one is asked of the API server) and starts the
// resolver. It returns ctx's error if ctx ends first, or Stop is called,
// and an error once Stop was called; a Start that failed (an invalid
// cluster ConfigMap, a server that did not answer) may be called again,
// and one that succeeded may not.
func (r *Resolver[T]) Start(ctx context.Context) error {
	r.mu.Lock()
	switch {
	case r.stopped:
		r.mu.Unlock()
		return errors.New("strataknative: the resolver was stopped")
	case r.cancel != nil:
		r.mu.Unlock()
		return errors.New("strataknative: the resolver was started already")
	}
	ctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	r.starting.Add(1)
	r.mu.Unlock()
	defer r.starting.Done()
	err := r.start(ctx)
	if err != nil {
		cancel()
		r.mu.Lock()
		r.cancel = nil // to be started again
		r.mu.Unlock()
	}
	return err
}

func (r *Resolver[T]) start(ctx context.Context) error {
	select {
	case <-r.cluster.delivered:
	case <-ctx.Done():
		return fmt.Errorf("strataknative: the configmap.Watcher delivered %s, of %s: %w", r.cluster.got(), strings.Join(r.cluster.names, ", "), context.Cause(ctx))
	}
	// A default stands for a ConfigMap only if there is none the watcher
	// delivers: one that exists, and that the watcher sees, is waited
	// for as the watcher delivers it, the server asked again each second
	// meanwhile (it may go before the watcher lists).
	for _, name := range r.cluster.defaulted() {
		for {
			cm, err := r.kc.CoreV1().ConfigMaps(r.ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || err == nil && !watched(cm) {
				break // knative's readers have the default too
			}
			if err == nil && cm.ResourceVersion == "" && r.cluster.holds(name) {
				break // a server that gives no versions (a fake's): the one delivered is its
			}
			if err != nil {
				return fmt.Errorf("strataknative: reading ConfigMap %s/%s: %w", r.ns, name, err)
			}
			wait, cancel := context.WithTimeout(ctx, time.Second)
			err = r.cluster.waitReal(wait, name)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("strataknative: the configmap.Watcher has not delivered ConfigMap %s/%s, which exists: %w", r.ns, name, context.Cause(ctx))
			}
		}
	}
	return r.Resolver.Start(ctx)
}

// watched reports whether the watcher sharedmain builds delivers cm: with
// SYSTEM_RESOURCE_LABEL set, it lists only the ConfigMaps that carry that
// label (SetupConfigMapWatchOrDie).
func watched(cm *corev1.ConfigMap) bool {
	label := system.ResourceLabel()
	_, ok := cm.Labels[label]
	return label == "" || ok
}

// defaultMark marks the default this package gives knative's watcher for
// a cluster ConfigMap, which the watcher delivers when there is none (and
// first, before it has read the server's): it stands for no ConfigMap.
const defaultMark = "strataknative.strata.dev/default"

// watcherNamespace is the namespace w watches, when it says.
func watcherNamespace(w configmap.Watcher) (string, bool) {
	switch w := w.(type) {
	case *informer.InformedWatcher:
		return w.Namespace, true
	case *configmap.ManualWatcher:
		return w.Namespace, true
	}
	return "", false
}

// Stop stops the resolver, and waits for it and for a Start under way.
func (r *Resolver[T]) Stop() {
	r.mu.Lock()
	cancel := r.cancel
	r.stopped = true
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		r.starting.Wait()
	}
	r.Resolver.Stop()
}

// LogChanges logs through logger (a knative controller's,
// logging.FromContext(ctx)) each change of a cached namespace's
// configuration, once the new one is what a reconcile reads: the
// namespace, the hash before and after, the layers it is built from and
// the keys its own or selector ConfigMaps set. A namespace's changes
// that come faster than they are logged fold into one line. cancel stops
// it; Stop ends it too. Serve r.ZPages for the configuration itself.
func (r *Resolver[T]) LogChanges(logger *zap.SugaredLogger) (cancel func()) {
	return r.Subscribe(func(ns string, old, new *namespaced.Snapshot[T]) {
		sources := make([]string, 0, len(new.Sources()))
		for _, s := range new.Sources() {
			sources = append(sources, s.String())
		}
		logger.Infow("Namespace configuration changed", "namespace", ns, "from", old.Hash(), "to", new.Hash(),
			"sources", sources, "overrides", new.Overrides())
	})
}

// clusterNames returns the cluster ConfigMaps of o.
func clusterNames[T any](o namespaced.Options[T]) []string {
	if o.Parsed == nil {
		return []string{o.ClusterConfigMap}
	}
	out := make([]string, len(o.Parsed.Sections))
	for i, s := range o.Parsed.Sections {
		out[i] = s.ClusterConfigMap
	}
	return out
}

// clusterReader serves the cluster ConfigMaps a watcher delivered: the
// resolver's Options.Cluster.
type clusterReader struct {
	names []string
	// defaulting says the watcher delivers defaults (a
	// configmap.DefaultingWatcher, knative's InformedWatcher); one that
	// does not (a ManualWatcher) delivers only what it is given.
	defaulting bool

	mu        sync.RWMutex
	cms       map[string]*corev1.ConfigMap
	seen      map[string]bool
	delivered chan struct{} // closed once every name was delivered
	changed   chan struct{} // closed and replaced at each delivery
}

// set records cm as the ConfigMap name as delivered: the server's when
// real, the watcher's default (none) otherwise.
func (c *clusterReader) set(name string, cm *corev1.ConfigMap, real bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !real {
		cm = nil
	}
	c.cms[name] = cm
	if !c.seen[name] {
		c.seen[name] = true
		if len(c.seen) == len(c.names) {
			close(c.delivered)
		}
	}
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// defaulted returns the names the watcher last delivered as a default:
// this package's, or, from a watcher that delivers defaults, one of no
// resourceVersion, which the server's copy always has (a default the
// controller gave the watcher, delivered first as this package's is).
func (c *clusterReader) defaulted() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, n := range c.names {
		if !c.versioned(n) {
			out = append(out, n)
		}
	}
	return out
}

// holds reports whether the watcher last delivered an object for
// name, this package's default aside.
func (c *clusterReader) holds(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cms[name] != nil
}

// versioned reports whether the watcher last delivered for name an object
// with a resourceVersion, the server's, or any object where the watcher
// delivers no defaults. The caller holds c.mu.
func (c *clusterReader) versioned(name string) bool {
	return c.cms[name] != nil && (c.cms[name].ResourceVersion != "" || !c.defaulting)
}

// waitReal waits until the watcher has delivered the server's ConfigMap
// name, or ctx ends.
func (c *clusterReader) waitReal(ctx context.Context, name string) error {
	for {
		c.mu.Lock()
		if c.versioned(name) {
			c.mu.Unlock()
			return nil
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// got names the cluster ConfigMaps delivered so far.
func (c *clusterReader) got() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, n := range c.names {
		if c.seen[n] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// ConfigMap returns the cluster ConfigMap name as the watcher delivered
// it; the resolver asks for no other.
func (c *clusterReader) ConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cms[name], nil
}

func (c *clusterReader) ConfigMaps(context.Context, string, labels.Selector) ([]*corev1.ConfigMap, error) {
	return nil, errors.New("strataknative: the watcher serves the cluster ConfigMaps by name only")
}

func (c *clusterReader) NamespaceLabels(context.Context, string) (map[string]string, error) {
	return nil, errors.New("strataknative: the watcher serves no namespace")
}

// IntoContext returns ctx carrying the configuration of namespace ns, put
// there by put through the project's own context (for Tekton,
// tektonconfig.ToContext over config.ToContext), so that every reader of
// the project's FromContextOrDefaults sees the namespace's configuration
// unchanged: the one call at a reconciler's entry, once the object's
// namespace is known. r is this package's Resolver or any of
// layers/namespaced's; a cached read costs nothing more. On an error it
// returns ctx as it was, with the error.
func IntoContext[T any](ctx context.Context, r reader[T], ns string, put func(context.Context, *namespaced.Snapshot[T]) context.Context) (context.Context, error) {
	if ns == "" {
		return ctx, errors.New("strataknative: the object has no namespace")
	}
	snap, err := r.ForNamespace(ctx, ns)
	if err != nil {
		return ctx, fmt.Errorf("strataknative: the configuration of namespace %s: %w", ns, err)
	}
	return put(ctx, snap), nil
}

// WrapContext returns the wrap-context function to give knative's
// defaulting.NewAdmissionController or validation.NewAdmissionController
// in place of wc, the project's own (for Tekton, store.ToContext): it
// calls wc, then, for a request that Admission let through, puts the
// configuration of the request's namespace with put, so that the type's
// SetDefaults and Validate read it from the project's context unchanged.
func WrapContext[T any](wc func(context.Context) context.Context, put func(context.Context, *namespaced.Snapshot[T]) context.Context) func(context.Context) context.Context {
	return func(ctx context.Context) context.Context {
		if wc != nil {
			ctx = wc(ctx)
		}
		if snap, ok := ctx.Value(admittedKey{}).(*namespaced.Snapshot[T]); ok {
			ctx = put(ctx, snap)
		}
		return ctx
	}
}

// admissionReconciler is what knative's admission controllers are: a
// reconciler of their webhook configuration, leader-aware, and the
// admission itself.
type admissionReconciler interface {
	controller.Reconciler
	pkgreconciler.LeaderAware
	webhook.AdmissionController
}

// Admission wraps the reconciler of an admission controller that knative
// built with a WrapContext function (impl.Reconciler =
// strataknative.Admission(r, impl.Reconciler)): each namespaced request
// that creates or updates an object reads its namespace's configuration
// from r (this package's Resolver, or any of layers/namespaced's) before
// the controller
// decodes the object, for WrapContext to put in the context. A request
// whose namespace's configuration cannot be read is refused, saying why,
// rather than defaulted with another namespace's; a cluster-scoped one
// passes as it is. It keeps what the controller is besides, so knative's
// webhook serves it and its webhook configuration is still reconciled,
// but not the promise that it reads no informer: knative waits for the
// informers to sync before it serves it.
func Admission[T any](r reader[T], inner controller.Reconciler) controller.Reconciler {
	ac, ok := inner.(admissionReconciler)
	if !ok {
		panic(fmt.Sprintf("strataknative: %T is not a knative admission controller", inner))
	}
	return &admission[T]{admissionReconciler: ac, r: r}
}

type admission[T any] struct {
	admissionReconciler
	r reader[T]
}

// admittedKey carries, from Admission to WrapContext, the snapshot of the
// namespace of the request under admission.
type admittedKey struct{}

// reader is what IntoContext and Admission read a namespace's
// configuration from: a Resolver of this package, or any of
// layers/namespaced's (a Resolver, a Direct one for a webhook that keeps
// no cache).
type reader[T any] interface {
	ForNamespace(ctx context.Context, ns string) (*namespaced.Snapshot[T], error)
}

func (a *admission[T]) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Namespace != "" && (req.Operation == admissionv1.Create || req.Operation == admissionv1.Update) {
		snap, err := a.r.ForNamespace(ctx, req.Namespace)
		if err != nil {
			return webhook.MakeErrorStatus("the configuration of namespace %s cannot be read: %v", req.Namespace, err)
		}
		ctx = context.WithValue(ctx, admittedKey{}, snap)
	}
	return a.admissionReconciler.Admit(ctx, req)
}
