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

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"
	"knative.dev/pkg/webhook"

	"github.com/stratacfg/strata/layers/namespaced"
)

// Resolver is a namespaced resolver wired into a knative controller: its
// cluster ConfigMaps are those the controller's configmap.Watcher
// delivers, and its namespace ConfigMaps (and the selector ConfigMaps and
// namespace labels, with selector layers) come from informers of its own,
// each filtered by the labels that mark what strata reads.
type Resolver[T any] struct {
	*namespaced.Resolver[T]
	factories []informers.SharedInformerFactory
	cluster   *clusterReader

	mu       sync.Mutex
	cancel   context.CancelFunc // stops the informers; nil before Start
	starting sync.WaitGroup     // a Start under way
	stopped  bool               // Stop was called: Start refuses
}

// New returns a resolver of o over kc whose cluster ConfigMaps are what w
// delivers. It registers its observers on w, so call it where a knative
// controller is constructed, before sharedmain starts w; when w can watch
// with a default (knative's InformedWatcher), a cluster ConfigMap that does
// not exist is an empty one. Start it in any order with w: Start waits,
// within its context, until its informers have synced and w has delivered
// every cluster ConfigMap.
func New[T any](kc kubernetes.Interface, w configmap.Watcher, o namespaced.Options[T]) (*Resolver[T], error) {
	filtered := func(namespace string, set map[string]string) informers.SharedInformerFactory {
		sel := labels.SelectorFromSet(set).String()
		return informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(namespace),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = sel }))
	}
	own := filtered(metav1.NamespaceAll, o.Labels)
	r := &Resolver[T]{factories: []informers.SharedInformerFactory{own}}
	rest := &listers{cms: []corelisters.ConfigMapLister{own.Core().V1().ConfigMaps().Lister()}}
	handled := []cache.SharedIndexInformer{own.Core().V1().ConfigMaps().Informer()}
	if o.Selectors != nil {
		sels := filtered(o.Namespace, o.Selectors.Labels)
		all := informers.NewSharedInformerFactory(kc, 0)
		r.factories = append(r.factories, sels, all)
		rest.cms = append(rest.cms, sels.Core().V1().ConfigMaps().Lister())
		rest.nss = all.Core().V1().Namespaces().Lister()
		handled = append(handled, sels.Core().V1().ConfigMaps().Informer(), all.Core().V1().Namespaces().Informer())
	}
	r.cluster = &clusterReader{namespace: o.Namespace, rest: rest, cms: map[string]*corev1.ConfigMap{}, seen: map[string]bool{}, delivered: make(chan struct{})}
	for _, name := range clusterNames(o) {
		if !slices.Contains(r.cluster.names, name) {
			r.cluster.names = append(r.cluster.names, name)
		}
	}
	inner, err := namespaced.NewFromReader(r.cluster, o)
	if err != nil {
		return nil, err
	}
	r.Resolver = inner
	for _, inf := range handled {
		if _, err := inf.AddEventHandler(inner.EventHandler()); err != nil {
			return nil, err
		}
	}
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

// Start starts the resolver's informers, waits until they have synced and
// the watcher has delivered every cluster ConfigMap, and starts the
// resolver. It returns ctx's error if ctx ends first, or Stop is called,
// and an error once Stop was called; the resolver starts once, and a
// failed Start stops its informers.
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
	err := r.start(ctx)
	if err != nil {
		r.cancel()
	}
	return err
}

func (r *Resolver[T]) start(ctx context.Context) error {
	for _, f := range r.factories {
		f.Start(ctx.Done())
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("strataknative: the informer of %v did not sync: %w", typ, context.Cause(ctx))
			}
		}
	}
	select {
	case <-r.cluster.delivered:
	case <-ctx.Done():
		return fmt.Errorf("strataknative: the configmap.Watcher delivered %s, of %s: %w", r.cluster.got(), strings.Join(r.cluster.names, ", "), context.Cause(ctx))
	}
	return r.Resolver.Start(ctx)
}

// Stop stops the resolver and its informers, and waits for them and for a
// Start under way.
func (r *Resolver[T]) Stop() {
	r.mu.Lock()
	cancel := r.cancel
	r.stopped = true
	r.mu.Unlock()
	if cancel == nil {
		r.Resolver.Stop()
		return
	}
	cancel()
	r.starting.Wait()
	r.Resolver.Stop()
	for _, f := range r.factories {
		f.Shutdown()
	}
}

// listers reads namespace ConfigMaps from one or more ConfigMap listers
// (each holding the ConfigMaps of one label set) and namespace labels from
// a Namespace lister.
type listers struct {
	cms []corelisters.ConfigMapLister
	nss corelisters.NamespaceLister
}

func (l *listers) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	for _, cms := range l.cms {
		if cm, err := namespaced.ListerReader(cms, nil).ConfigMap(ctx, namespace, name); cm != nil || err != nil {
			return cm, err
		}
	}
	return nil, nil
}

func (l *listers) ConfigMaps(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	var out []*corev1.ConfigMap
	seen := map[string]bool{}
	for _, cms := range l.cms {
		got, err := cms.ConfigMaps(namespace).List(sel)
		if err != nil {
			return nil, err
		}
		for _, cm := range got {
			if !seen[cm.Name] {
				seen[cm.Name] = true
				out = append(out, cm)
			}
		}
	}
	return out, nil
}

func (l *listers) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	return namespaced.ListerReader(nil, l.nss).NamespaceLabels(ctx, name)
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

// clusterReader serves the cluster ConfigMaps a watcher delivered, and
// everything else from rest.
type clusterReader struct {
	namespace string
	rest      namespaced.Reader
	names     []string

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

func (c *clusterReader) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if namespace == c.namespace {
		for _, n := range c.names {
			if n == name {
				c.mu.RLock()
				defer c.mu.RUnlock()
				return c.cms[name], nil
			}
		}
	}
	return c.rest.ConfigMap(ctx, namespace, name)
}

func (c *clusterReader) ConfigMaps(ctx context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	return c.rest.ConfigMaps(ctx, namespace, sel)
}

func (c *clusterReader) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	return c.rest.NamespaceLabels(ctx, name)
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
