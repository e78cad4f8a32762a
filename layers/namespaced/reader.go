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
	return readClusters(ctx, s.r, s.c.o.Namespace, s.c.clusterCMs)
}

// readClusters reads the cluster ConfigMaps names of namespace ns through
// r, by name; one absent is left out.
func readClusters(ctx context.Context, r Reader, ns string, names []string) (map[string]*corev1.ConfigMap, error) {
	out := map[string]*corev1.ConfigMap{}
	for _, name := range names {
		cm, err := r.ConfigMap(ctx, ns, name)
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

// readerMode reads every ConfigMap through a store at each build: the
// caller's Reader (NewFromReader), or the informers it starts itself
// (NewInformer). Its records hold nothing.
type readerMode[T any] struct {
	c      *core[T]
	st     *state[T]
	client kubernetes.Interface // NewInformer: starts the informers
	reader store                // NewFromReader: the caller's
	inf    *informerSet
}

func (m *readerMode[T]) start(ctx context.Context) (store, error) {
	if m.client == nil {
		return m.reader, nil
	}
	var err error
	m.inf, err = startInformers(ctx, m.client, m.c, true)
	return m.inf, err
}

func (m *readerMode[T]) started(context.Context) error {
	if m.inf == nil {
		return nil
	}
	return m.inf.handle(m.st.changed)
}

func (m *readerMode[T]) stop() {
	m.inf.shutdown()
	m.inf = nil
}

func (m *readerMode[T]) first(context.Context, string, func(func(*record[T]) bool)) error { return nil }

func (m *readerMode[T]) invalidate(obj any) { m.st.changed(obj) }
