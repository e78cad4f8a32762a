package namespaced

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// objectReader is a Reader over literal objects, for tests with no
// cluster.
type objectReader struct {
	mu  sync.Mutex
	cms map[string]map[string]*corev1.ConfigMap // by namespace, then name
	nss map[string]*corev1.Namespace
}

var _ Reader = (*objectReader)(nil)

func newObjectReader(objs ...any) *objectReader {
	r := &objectReader{cms: map[string]map[string]*corev1.ConfigMap{}, nss: map[string]*corev1.Namespace{}}
	r.set(objs...)
	return r
}

// set adds or replaces objects, ConfigMaps and Namespaces.
func (r *objectReader) set(objs ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			if r.cms[o.Namespace] == nil {
				r.cms[o.Namespace] = map[string]*corev1.ConfigMap{}
			}
			r.cms[o.Namespace][o.Name] = o
		case *corev1.Namespace:
			r.nss[o.Name] = o
		}
	}
}

// del removes a ConfigMap.
func (r *objectReader) del(namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cms[namespace], name)
}

func (r *objectReader) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cms[namespace][name], nil
}

func (r *objectReader) ConfigMaps(_ context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*corev1.ConfigMap
	for _, cm := range r.cms[namespace] {
		if sel.Matches(labels.Set(cm.Labels)) {
			out = append(out, cm)
		}
	}
	return out, nil
}

func (r *objectReader) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nss[name]; n != nil {
		return n.Labels, nil
	}
	return nil, nil
}
