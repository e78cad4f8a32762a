package namespaced

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// informerSet holds the informers a resolver runs: the cluster ConfigMap
// (scoped to its name), and as configured the selector ConfigMaps, the
// namespaces, and the label-filtered cluster-wide namespace ConfigMaps.
// It is the Reader of what they hold: the cluster ConfigMaps by name, the
// selector ConfigMaps (the labelled ConfigMaps of the component's
// namespace) and, with the namespace ConfigMaps' informer, those of any
// other namespace.
type informerSet struct {
	// cluster, Options.Cluster, is where the cluster ConfigMaps (names,
	// in ns) are read instead of watched.
	cluster    Reader
	ns         string
	names      []string
	factories  []informers.SharedInformerFactory
	clusterInf []cache.SharedIndexInformer
	clusterCMs map[string]corelisters.ConfigMapNamespaceLister // by name
	selector   cache.SharedIndexInformer
	selectorLs corelisters.ConfigMapNamespaceLister
	namespace  cache.SharedIndexInformer
	namespaces corelisters.NamespaceLister
	cm         cache.SharedIndexInformer
	cms        corelisters.ConfigMapLister
}

var _ Reader = (*informerSet)(nil)

// startInformers starts the informers c needs, the namespace ConfigMaps'
// when withConfigMaps is set, and waits for their caches.
func startInformers[T any](ctx context.Context, client kubernetes.Interface, c *core[T], withConfigMaps bool) (*informerSet, error) {
	s := &informerSet{clusterCMs: map[string]corelisters.ConfigMapNamespaceLister{}, cluster: c.o.Cluster, ns: c.o.Namespace, names: c.clusterCMs}
	factory := func(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
		s.factories = append(s.factories, f)
		return f
	}
	slimmed := func(layers []string, annotations ...string) informers.SharedInformerOption { // ConfigMaps as a layer reads them
		return informers.WithTransform(func(obj any) (any, error) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				return slim(cm, layers, annotations...), nil
			}
			return obj, nil
		})
	}
	own := c.o.Namespace
	for _, name := range c.clusterCMs { // each watched by name, unless read elsewhere
		if s.cluster != nil {
			break // Options.Cluster: the caller watches them
		}
		f := factory(informers.WithNamespace(own), informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
		s.clusterInf = append(s.clusterInf, f.Core().V1().ConfigMaps().Informer())
		s.clusterCMs[name] = f.Core().V1().ConfigMaps().Lister().ConfigMaps(own)
	}
	if c.selectorCMs != nil {
		sel, annotations := c.selectorCMs.String(), []string{c.o.Selectors.Annotation, c.o.Selectors.SectionAnnotation}
		f := factory(informers.WithNamespace(own), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }),
			slimmed(nil, annotations...))
		s.selector, s.selectorLs = f.Core().V1().ConfigMaps().Informer(), f.Core().V1().ConfigMaps().Lister().ConfigMaps(own)
		nf := factory(informers.WithTransform(func(obj any) (any, error) {
			if n, ok := obj.(*corev1.Namespace); ok { // only its labels are read
				return &corev1.Namespace{TypeMeta: n.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID,
					ResourceVersion: n.ResourceVersion, Labels: n.Labels}}, nil
			}
			return obj, nil
		}))
		s.namespace, s.namespaces = nf.Core().V1().Namespaces().Informer(), nf.Core().V1().Namespaces().Lister()
	}
	if withConfigMaps {
		sel := c.nsLabels.String()
		f := factory(informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }), slimmed(c.ownCMs))
		s.cm, s.cms = f.Core().V1().ConfigMaps().Informer(), f.Core().V1().ConfigMaps().Lister()
	}
	for _, f := range s.factories {
		f.Start(ctx.Done())
	}
	for _, f := range s.factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				s.shutdown()
				return nil, fmt.Errorf("namespaced: the %v informer did not sync: %w", typ, context.Cause(ctx))
			}
		}
	}
	return s, nil
}

func (s *informerSet) ConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	switch {
	case ns == s.ns && s.cluster != nil && slices.Contains(s.names, name):
		return s.cluster.ConfigMap(ctx, ns, name)
	case ns == s.ns && s.clusterCMs[name] != nil:
		return orNil(s.clusterCMs[name].Get(name))
	case s.cms != nil:
		return orNil(s.cms.ConfigMaps(ns).Get(name))
	}
	return nil, fmt.Errorf("namespaced: ConfigMap %s/%s is not among those the informers hold", ns, name)
}

func (s *informerSet) ConfigMaps(_ context.Context, ns string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	switch {
	case ns == s.ns && s.selectorLs != nil:
		return s.selectorLs.List(sel)
	case ns == s.ns:
		return nil, nil
	case s.cms != nil:
		return s.cms.ConfigMaps(ns).List(sel)
	}
	return nil, fmt.Errorf("namespaced: the ConfigMaps of namespace %s are not among those the informers hold", ns)
}

func (s *informerSet) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	if s.namespaces == nil {
		return nil, nil
	}
	return namespaceLabels(s.namespaces, name)
}

func (s *informerSet) shutdown() {
	if s == nil {
		return
	}
	for _, f := range s.factories {
		f.Shutdown()
	}
}

// handle adds handlers that call fn with every object added, updated or
// deleted to the informers of s; a Namespace update is passed on only when
// its labels changed.
func (s *informerSet) handle(fn func(obj any)) error {
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    fn,
		UpdateFunc: func(_, obj any) { fn(obj) },
		DeleteFunc: fn,
	}
	nsh := cache.ResourceEventHandlerFuncs{
		AddFunc: fn,
		UpdateFunc: func(old, obj any) {
			o, n := old.(*corev1.Namespace), obj.(*corev1.Namespace)
			if !labels.Equals(o.Labels, n.Labels) {
				fn(obj)
			}
		},
	}
	for _, inf := range append(slices.Clip(s.clusterInf), s.selector, s.cm) {
		if inf == nil {
			continue
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("namespaced: %w", err)
		}
	}
	if s.namespace != nil {
		if _, err := s.namespace.AddEventHandler(nsh); err != nil {
			return fmt.Errorf("namespaced: %w", err)
		}
	}
	return nil
}

// deletedObject unwraps the last known state of a deleted object.
func deletedObject(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
