package namespaced

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// store is where a caching mode reads ConfigMaps and namespace labels.
type store interface {
	// clusters returns the cluster ConfigMaps there are, by name.
	clusters(ctx context.Context) (map[string]*corev1.ConfigMap, error)
	// selectors returns the selector ConfigMaps.
	selectors(ctx context.Context) ([]*corev1.ConfigMap, error)
	// own returns the ConfigMaps of namespace ns that carry the
	// required labels.
	own(ctx context.Context, ns string) ([]*corev1.ConfigMap, error)
	// labels returns the labels of namespace ns, nil when there is none.
	labels(ctx context.Context, ns string) (map[string]string, error)
}

// informerSet holds the informers a resolver runs: the cluster ConfigMap
// (scoped to its name), and as configured the selector ConfigMaps, the
// namespaces, and the label-filtered cluster-wide namespace ConfigMaps.
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

var _ store = (*informerSet)(nil)

// startInformers starts the informers c needs, the namespace ConfigMaps'
// when withConfigMaps is set, and waits for their caches.
func startInformers[T any](ctx context.Context, client kubernetes.Interface, c *core[T], withConfigMaps bool) (*informerSet, error) {
	s := &informerSet{clusterCMs: map[string]corelisters.ConfigMapNamespaceLister{}, cluster: c.o.Cluster, ns: c.o.Namespace, names: c.clusterCMs}
	factory := func(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
		s.factories = append(s.factories, f)
		return f
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
			informers.WithTransform(func(obj any) (any, error) {
				if cm, ok := obj.(*corev1.ConfigMap); ok {
					slimmed := slim(cm)
					for _, a := range annotations {
						if v, ok := cm.Annotations[a]; ok {
							if slimmed.Annotations == nil {
								slimmed.Annotations = map[string]string{}
							}
							slimmed.Annotations[a] = v
						}
					}
					return slimmed, nil
				}
				return obj, nil
			}))
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
		f := factory(informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }),
			informers.WithTransform(func(obj any) (any, error) {
				if cm, ok := obj.(*corev1.ConfigMap); ok {
					return slim(cm), nil
				}
				return obj, nil
			}))
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

func (s *informerSet) clusters(ctx context.Context) (map[string]*corev1.ConfigMap, error) {
	out := map[string]*corev1.ConfigMap{}
	if s.cluster != nil {
		return readClusters(ctx, s.cluster, s.ns, s.names)
	}
	for name, l := range s.clusterCMs {
		cm, err := l.Get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[name] = cm
	}
	return out, nil
}

func (s *informerSet) selectors(context.Context) ([]*corev1.ConfigMap, error) {
	if s.selectorLs == nil {
		return nil, nil
	}
	return s.selectorLs.List(labels.Everything())
}

func (s *informerSet) labels(_ context.Context, ns string) (map[string]string, error) {
	if s.namespaces == nil {
		return nil, nil
	}
	n, err := s.namespaces.Get(ns)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return n.Labels, nil
}

func (s *informerSet) own(_ context.Context, ns string) ([]*corev1.ConfigMap, error) {
	if s.cms == nil {
		return nil, nil
	}
	return s.cms.ConfigMaps(ns).List(labels.Everything())
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
