// Package strataknative runs a strata namespaced resolver in a knative
// project (knative.dev/pkg: Serving, Eventing, Tekton): the cluster
// ConfigMaps come from the configmap.Watcher the controller runs already,
// so that they are not watched twice, and the configuration of an
// object's namespace goes into the project's own context, where its
// readers (FromContextOrDefaults) find it unchanged: one call at each
// entry.
//
//	r, err := strataknative.New(kubeclient.Get(ctx), cmw, opts) // in the controller's constructor
//	go r.Start(ctx)                                             // it waits until sharedmain has started cmw
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

	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"
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

	mu       sync.Mutex
	cancel   context.CancelFunc // stops what Start began; nil before Start
	starting sync.WaitGroup     // a Start under way
	stopped  bool               // Stop was called: Start refuses
}

// New returns a resolver of o over kc whose cluster ConfigMaps are what w
// delivers. It registers its observers on w, so call it where a knative
// controller is constructed, before sharedmain starts w; when w can watch
// with a default (knative's InformedWatcher), a cluster ConfigMap that does
// not exist is an empty one. Start it in any order with w: Start waits,
// within its context, until w has delivered every cluster ConfigMap. It
// needs list and watch on ConfigMaps cluster-wide, as NewLazy does.
func New[T any](kc kubernetes.Interface, w configmap.Watcher, o namespaced.Options[T]) (*Resolver[T], error) {
	r := &Resolver[T]{cluster: &clusterReader{cms: map[string]*corev1.ConfigMap{}, seen: map[string]bool{}, delivered: make(chan struct{})}}
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
			r.cluster.set(name, cm)
			inner.Invalidate(cm)
		}
		if dw, ok := w.(configmap.DefaultingWatcher); ok {
			dw.WatchWithDefault(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name}}, observe)
		} else {
			w.Watch(name, observe)
		}
	}
	return r, nil
}

// Start waits until the watcher has delivered every cluster ConfigMap and
// starts the resolver. It returns ctx's error if ctx ends first, or Stop
// is called, and an error once Stop was called; the resolver starts
// once.
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
	ctx, r.cancel = context.WithCancel(ctx)
	r.starting.Add(1)
	r.mu.Unlock()
	defer r.starting.Done()
	select {
	case <-r.cluster.delivered:
	case <-ctx.Done():
		return fmt.Errorf("strataknative: the configmap.Watcher delivered %s, of %s: %w", r.cluster.got(), strings.Join(r.cluster.names, ", "), context.Cause(ctx))
	}
	return r.Resolver.Start(ctx)
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

	mu        sync.RWMutex
	cms       map[string]*corev1.ConfigMap
	seen      map[string]bool
	delivered chan struct{} // closed once every name was delivered
}

func (c *clusterReader) set(name string, cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cms[name] = cm
	if !c.seen[name] {
		c.seen[name] = true
		if len(c.seen) == len(c.names) {
			close(c.delivered)
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
// layers/namespaced's; a cached read costs nothing more.
func IntoContext[T any](ctx context.Context, r reader[T], ns string, put func(context.Context, *namespaced.Snapshot[T]) context.Context) (context.Context, error) {
	if ns == "" {
		return nil, errors.New("strataknative: the object has no namespace")
	}
	snap, err := r.ForNamespace(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("strataknative: the configuration of namespace %s: %w", ns, err)
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
		if snap, ok := namespaced.FromContext[T](ctx); ok {
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
// reads its namespace's configuration from r (this package's Resolver,
// or any of layers/namespaced's) before the controller
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

// reader is what IntoContext and Admission read a namespace's
// configuration from: a Resolver of this package, or any of
// layers/namespaced's (a Resolver, a Direct one for a webhook that keeps
// no cache).
type reader[T any] interface {
	ForNamespace(ctx context.Context, ns string) (*namespaced.Snapshot[T], error)
}

func (a *admission[T]) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Namespace != "" {
		snap, err := a.r.ForNamespace(ctx, req.Namespace)
		if err != nil {
			return webhook.MakeErrorStatus("the configuration of namespace %s cannot be read: %v", req.Namespace, err)
		}
		ctx = namespaced.NewContext(ctx, snap)
	}
	return a.admissionReconciler.Admit(ctx, req)
}
