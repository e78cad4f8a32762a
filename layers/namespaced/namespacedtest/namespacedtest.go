// Package namespacedtest runs a namespaced resolver in a test, with no
// cluster: it reads ConfigMaps and Namespaces the test holds, and a test
// changes them as a cluster would, with the resolver told at once.
//
//	r, err := namespacedtest.New(opts,
//		namespacedtest.ClusterConfigMap(opts, map[string]string{"enforced-config-level": "namespace"}),
//		namespacedtest.NamespaceConfigMap(opts, "team-a", "overrides", map[string]string{"default-timeout-seconds": "60"}))
//	...
//	r.Set(namespacedtest.NamespaceConfigMap(opts, "team-a", "overrides", map[string]string{"default-timeout-seconds": "90"}))
//	// every snapshot the change affects is readable, and every subscriber was called
//
// The resolver is the one NewFromReader builds, with every policy, merge
// and validation of a live resolver: what a test sees is what a cluster
// would give.
package namespacedtest

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stratacfg/strata/layers/namespaced"
)

// Resolver is a started namespaced resolver over objects a test holds.
// Its methods are the namespaced resolver's, and Set and Delete change
// the objects.
type Resolver[T runtime.Object] struct {
	*namespaced.Resolver[T]
	store *store
}

// New returns a started resolver with options o that reads objs,
// ConfigMaps and Namespaces. An object with no resourceVersion or UID is
// given one, as a server would. Stop it when done (t.Cleanup(r.Stop)).
func New[T runtime.Object](o namespaced.Options[T], objs ...runtime.Object) (*Resolver[T], error) {
	st := &store{cms: map[types.NamespacedName]*corev1.ConfigMap{}, nss: map[string]*corev1.Namespace{}}
	if _, err := st.set(objs); err != nil {
		return nil, err
	}
	r, err := namespaced.NewFromReader(st, o)
	if err != nil {
		return nil, err
	}
	if err := r.Start(context.Background()); err != nil {
		return nil, err
	}
	return &Resolver[T]{Resolver: r, store: st}, nil
}

// Set adds or replaces objects, ConfigMaps and Namespaces, and tells the
// resolver, as an informer's event handler would. When it returns, every
// snapshot the change affects is what ForNamespace returns, and every
// subscriber has been called. A replaced object gets a new
// resourceVersion.
func (r *Resolver[T]) Set(objs ...runtime.Object) error {
	changed, err := r.store.set(objs)
	if err != nil {
		return err
	}
	for _, obj := range changed {
		r.Invalidate(obj)
	}
	return r.WaitForSubscribers(context.Background())
}

// Delete removes objects and tells the resolver, and returns as Set does.
func (r *Resolver[T]) Delete(objs ...runtime.Object) error {
	for _, obj := range objs {
		if err := r.store.del(obj); err != nil {
			return err
		}
		r.Invalidate(obj)
	}
	return r.WaitForSubscribers(context.Background())
}

// ClusterConfigMap is the cluster ConfigMap of options o holding data.
func ClusterConfigMap[T runtime.Object](o namespaced.Options[T], data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.ClusterConfigMap}, Data: data}
}

// NamespaceConfigMap is a ConfigMap named name in namespace ns, carrying
// the labels o requires of namespace layers, holding data. name must be
// one of o.NamespaceConfigMaps for it to be a layer.
func NamespaceConfigMap[T runtime.Object](o namespaced.Options[T], ns, name string, data map[string]string) *corev1.ConfigMap {
	ls := make(map[string]string, len(o.Labels))
	for k, v := range o.Labels {
		ls[k] = v
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: ls}, Data: data}
}

// SelectorConfigMap is a selector ConfigMap of options o (which must
// enable selector layers) named name, applying to the namespaces selector
// matches, holding data.
func SelectorConfigMap[T runtime.Object](o namespaced.Options[T], name, selector string, data map[string]string) *corev1.ConfigMap {
	ls := map[string]string{}
	annotation := namespaced.DefaultSelectorAnnotation
	if o.Selectors != nil {
		for k, v := range o.Selectors.Labels {
			ls[k] = v
		}
		if o.Selectors.Annotation != "" {
			annotation = o.Selectors.Annotation
		}
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Labels: ls, Annotations: map[string]string{annotation: selector}},
		Data:       data,
	}
}

// Namespace is a Namespace with labels, for selector layers.
func Namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// store holds the objects; it is the resolver's Reader.
type store struct {
	mu      sync.Mutex
	version int
	cms     map[types.NamespacedName]*corev1.ConfigMap
	nss     map[string]*corev1.Namespace
}

var _ namespaced.Reader = (*store)(nil)

// set stores copies of objs, with resourceVersions and UIDs, and returns
// the copies.
func (s *store) set(objs []runtime.Object) ([]runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]runtime.Object, 0, len(objs))
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			c := o.DeepCopy()
			key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
			var prev *metav1.ObjectMeta
			if cur := s.cms[key]; cur != nil {
				prev = &cur.ObjectMeta
			}
			s.stamp(&c.ObjectMeta, prev)
			s.cms[key] = c
			out = append(out, c)
		case *corev1.Namespace:
			c := o.DeepCopy()
			var prev *metav1.ObjectMeta
			if cur := s.nss[c.Name]; cur != nil {
				prev = &cur.ObjectMeta
			}
			s.stamp(&c.ObjectMeta, prev)
			s.nss[c.Name] = c
			out = append(out, c)
		default:
			return nil, fmt.Errorf("namespacedtest: %T is neither a ConfigMap nor a Namespace", obj)
		}
	}
	return out, nil
}

// stamp gives meta the next resourceVersion, and the UID of the object it
// replaces (prev) or a new one.
func (s *store) stamp(meta, prev *metav1.ObjectMeta) {
	s.version++
	meta.ResourceVersion = strconv.Itoa(s.version)
	switch {
	case prev != nil:
		meta.UID = prev.UID
	case meta.UID == "":
		meta.UID = types.UID("namespacedtest-" + strconv.Itoa(s.version))
	}
}

func (s *store) del(obj runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		delete(s.cms, types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
	case *corev1.Namespace:
		delete(s.nss, o.Name)
	default:
		return fmt.Errorf("namespacedtest: %T is neither a ConfigMap nor a Namespace", obj)
	}
	return nil
}

func (s *store) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cms[types.NamespacedName{Namespace: namespace, Name: name}], nil
}

func (s *store) ConfigMaps(_ context.Context, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.ConfigMap
	for key, cm := range s.cms {
		if key.Namespace == namespace && sel.Matches(labels.Set(cm.Labels)) {
			out = append(out, cm)
		}
	}
	return out, nil
}

func (s *store) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.nss[name]; n != nil {
		return n.Labels, nil
	}
	return nil, nil
}
