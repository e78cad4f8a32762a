package namespaced

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Reader reads ConfigMaps, and the labels of Namespaces, from a cache the
// caller keeps. ListerReader adapts client-go listers; strata's
// controller-runtime integration adapts a manager's client.Reader. Its
// methods are called from the goroutines that resolve and that invalidate,
// concurrently. The objects it returns are never changed in place, as
// those of client-go's caches are not: a change is a new object. The
// resolver keeps what it made of an object for as long as it is given
// the same one.
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
	return orNil(l.cms.ConfigMaps(namespace).Get(name))
}

func (l listerReader) ConfigMaps(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.ConfigMap, error) {
	return l.cms.ConfigMaps(namespace).List(selector)
}

func (l listerReader) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	if l.nss == nil {
		return nil, fmt.Errorf("namespaced: no Namespace lister to read the labels of %s", name)
	}
	return namespaceLabels(l.nss, name)
}

// namespaceLabels reads the labels of the namespace name from l; none
// when there is no such namespace.
func namespaceLabels(l corelisters.NamespaceLister, name string) (map[string]string, error) {
	n, err := orNil(l.Get(name))
	if n == nil {
		return nil, err
	}
	return n.Labels, nil
}

// orNil turns a lister's NotFound into no object and no error.
func orNil[O any](o *O, err error) (*O, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return o, err
}

// clusters reads the cluster ConfigMaps by name through r; one absent is
// left out.
func (c *core[T]) clusters(ctx context.Context, r Reader) (map[string]*corev1.ConfigMap, error) {
	out := map[string]*corev1.ConfigMap{}
	for _, name := range c.clusterCMs {
		cm, err := r.ConfigMap(ctx, c.o.Namespace, name)
		if err != nil {
			return nil, err
		}
		if cm != nil {
			out[name] = cm
		}
	}
	return out, nil
}

// selectors reads the selector ConfigMaps through r and parses them;
// none without selector layers.
func (c *core[T]) selectors(ctx context.Context, r Reader) ([]*selectorLayer, error) {
	if c.selectorCMs == nil {
		return nil, nil
	}
	cms, err := r.ConfigMaps(ctx, c.o.Namespace, c.selectorCMs)
	if err != nil {
		return nil, err
	}
	return c.readSelectors(cms), nil
}

// labels reads the labels of namespace ns through r; none without
// selector layers, which alone read them.
func (c *core[T]) labels(ctx context.Context, r Reader, ns string) (map[string]string, error) {
	if c.selectorCMs == nil {
		return nil, nil
	}
	return r.NamespaceLabels(ctx, ns)
}

// readerMode reads every layer through a Reader at each build, and is
// told of changes by Invalidate: NewFromReader's mode. Its records hold
// nothing.
type readerMode[T any] struct {
	st *state[T]
	r  Reader
}

func (m *readerMode[T]) start(context.Context) (Reader, error)           { return m.r, nil }
func (m *readerMode[T]) started(context.Context) error                   { return nil }
func (m *readerMode[T]) stop()                                           {}
func (m *readerMode[T]) first(context.Context, string) (*listing, error) { return nil, nil }
func (m *readerMode[T]) invalidate(obj any)                              { m.st.changed(obj) }

// informerMode is readerMode over informers of its own, whose handlers
// tell it of changes: NewInformer's mode, as knative's informed watcher
// is its manual one fed by informers.
type informerMode[T any] struct {
	readerMode[T]
	c      *core[T]
	client kubernetes.Interface
	inf    *informerSet
}

func (m *informerMode[T]) start(ctx context.Context) (Reader, error) {
	var err error
	m.inf, err = startInformers(ctx, m.client, m.c, true)
	return m.inf, err
}

func (m *informerMode[T]) started(context.Context) error { return m.inf.handle(m.st.changed) }

func (m *informerMode[T]) stop() {
	m.inf.shutdown()
	m.inf = nil
}
