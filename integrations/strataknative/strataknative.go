// Package strataknative runs a strata namespaced resolver in a knative
// project (knative.dev/pkg: Serving, Eventing, Tekton): the cluster
// ConfigMaps come from the configmap.Watcher the controller runs already,
// so that they are not watched twice, and a webhook's defaulting or
// validation reads the configuration of the object's own namespace from
// the context, with no second decode of the request.
//
//	r, err := strataknative.New(cmw, namespaced.ListerReader(cms, nil), opts)
//	...
//	wc := func(ctx context.Context) context.Context { return strataknative.WithResolver(store.ToContext(ctx), r) }
//	// in the type's SetDefaults(ctx) or Validate(ctx):
//	snap, err := strataknative.ForNamespace[*Config](ctx, obj.Namespace)
//
// It is a module of its own, so that strata's go.mod never requires
// knative.
package strataknative

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"knative.dev/pkg/configmap"

	"github.com/stratacfg/strata/layers/namespaced"
)

// New returns a resolver built with namespaced.NewFromReader whose cluster
// ConfigMaps are what w delivers, and whose namespace ConfigMaps (and
// namespace labels, with selector layers) are read through namespaces,
// the listers of an informer the controller runs. It registers its
// observers on w, so call it before w.Start; when w can watch with a
// default (knative's InformedWatcher), a cluster ConfigMap that does not
// exist is an empty one, so that Start does not wait for it. Tell the
// resolver of namespace ConfigMap changes with its EventHandler on that
// informer, then Start it.
func New[T any](w configmap.Watcher, namespaces namespaced.Reader, o namespaced.Options[T]) (*namespaced.Resolver[T], error) {
	cr := &clusterReader{namespace: o.Namespace, rest: namespaces, cms: map[string]*corev1.ConfigMap{}}
	r, err := namespaced.NewFromReader(cr, o)
	if err != nil {
		return nil, err
	}
	for _, name := range clusterNames(o) {
		cr.names = append(cr.names, name)
		observe := func(cm *corev1.ConfigMap) {
			cr.set(name, cm)
			r.Invalidate(cm)
		}
		if dw, ok := w.(configmap.DefaultingWatcher); ok {
			dw.WatchWithDefault(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name}}, observe)
		} else {
			w.Watch(name, observe)
		}
	}
	return r, nil
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

	mu  sync.RWMutex
	cms map[string]*corev1.ConfigMap
}

func (c *clusterReader) set(name string, cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cms[name] = cm
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

type resolverKey struct{}

// WithResolver returns ctx carrying r: the context a knative webhook's
// wrap-context function gives (defaulting.NewAdmissionController's wc),
// before the request is decoded. It reads nothing.
func WithResolver[T any](ctx context.Context, r *namespaced.Resolver[T]) context.Context {
	return context.WithValue(ctx, resolverKey{}, r)
}

// ErrNoResolver is returned by ForNamespace when the context carries no
// resolver of the configuration type asked for.
var ErrNoResolver = errors.New("strataknative: the context carries no resolver of that configuration")

// ForNamespace returns the configuration of namespace ns from the resolver
// ctx carries: called in a type's SetDefaults or Validate with the
// namespace of the object being admitted, which knative has decoded
// already, it costs a cached read and no decode.
func ForNamespace[T any](ctx context.Context, ns string) (*namespaced.Snapshot[T], error) {
	r, ok := ctx.Value(resolverKey{}).(*namespaced.Resolver[T])
	if !ok {
		return nil, ErrNoResolver
	}
	if ns == "" {
		return nil, fmt.Errorf("strataknative: the object has no namespace")
	}
	return r.ForNamespace(ctx, ns)
}
