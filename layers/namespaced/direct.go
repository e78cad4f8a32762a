package namespaced

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// Direct resolves a namespace by reading every layer with direct GETs on
// each call, and caches no snapshot: for admission webhooks and one-shot
// commands. Concurrent calls share nothing mutable but the cluster
// ConfigMaps parsed last and a lossy table of the ConfigMaps already
// reported, both read and written without a lock, and the namespace
// ConfigMaps parsed last (at most 1,024, each by its version and data),
// behind a lock held only to look one up. It has no subscriptions and
// nothing to invalidate: what it keeps is used only for the very
// version and data it was made from.
type Direct[T any] struct {
	c        *core[T]
	client   kubernetes.Interface
	parse    memo[T]
	reported *reportTable
	events   eventSink
	stopEv   func()
}

// NewDirect returns a Direct resolver that reads through client.
func NewDirect[T any](client kubernetes.Interface, o Options[T]) (*Direct[T], error) {
	c, err := newCore(o)
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, fmt.Errorf("namespaced: a Direct resolver needs a client")
	}
	if o.Cluster != nil {
		return nil, fmt.Errorf("namespaced: resolver options: Cluster is for NewLazy and NewInformer: a Direct resolver reads the cluster ConfigMaps on every call")
	}
	return &Direct[T]{c: c, client: client, reported: newReportTable()}, nil
}

// Start starts recording Events, through the options' recorder or, with
// none, through the client; Stop stops it.
func (d *Direct[T]) Start(ctx context.Context) error {
	var err error
	d.events, d.stopEv, err = d.c.events(ctx, d.client)
	return err
}

// Stop stops what Start began.
func (d *Direct[T]) Stop() {
	if d.stopEv != nil {
		d.stopEv()
	}
}

// CheckConfigMap is Resolver.CheckConfigMap, against the cluster
// ConfigMaps as read now.
func (d *Direct[T]) CheckConfigMap(ctx context.Context, cm *corev1.ConfigMap) (warnings []string, err error) {
	return d.c.check(ctx, d.cluster, cm)
}

// ForNamespace reads and returns the snapshot of namespace ns. The error
// is about reading; invalid tenant input never fails a resolve.
func (d *Direct[T]) ForNamespace(ctx context.Context, ns string) (*Snapshot[T], error) {
	c := d.c
	cms := d.client.CoreV1()
	clusters, err := c.clusters(ctx, d.get)
	if err != nil {
		return nil, err
	}
	var objs []runtime.Object
	for _, name := range c.clusterCMs {
		if cm := clusters[name]; cm != nil {
			objs = append(objs, cm)
		}
	}
	if c.o.Selectors != nil {
		sels, err := d.selectorConfigMaps(ctx)
		if err != nil {
			return nil, err
		}
		for _, cm := range sels {
			objs = append(objs, cm)
		}
		n, err := cms.Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		if err == nil {
			objs = append(objs, n)
		}
	}
	if !c.system(ns) {
		for _, name := range c.ownCMs {
			cm, err := d.get(ctx, ns, name)
			if err != nil {
				return nil, err
			}
			if cm != nil {
				objs = append(objs, cm)
			}
		}
	}
	s, ignored, err := c.resolveObjects(&d.parse, ns, objs)
	if err != nil {
		return nil, err
	}
	for _, ig := range ignored {
		if d.reported.first(ig.origin+":"+ig.cm.Namespace+"/"+ig.cm.Name, ig.cm.ResourceVersion) {
			c.ignored(d.events, ig)
		}
	}
	for _, r := range refusals(s, nil, ownOf(objs, ns), c.o.TenantKeysDoc) {
		if d.events != nil && d.reported.first("refused:"+r.cm.Namespace+"/"+r.cm.Name, r.cm.ResourceVersion) {
			d.events.warn(r.cm, ReasonKeysRefused, "Merge", r.note)
		}
	}
	return s, nil
}

// cluster reads the cluster ConfigMaps and returns their state, parsed
// unless they are the ones parsed last. When they are invalid it returns
// the last valid state this resolver parsed, or the defaults, with them
// and why.
func (d *Direct[T]) cluster(ctx context.Context) (clusterView[T], error) {
	cms, err := d.c.clusters(ctx, d.get)
	if err != nil {
		return clusterView[T]{}, err
	}
	cl, invalid := d.parse.parse(d.c, cms)
	if invalid == nil {
		return clusterView[T]{cl: cl, selectors: d.selectors}, nil
	}
	v := clusterView[T]{cl: d.parse.last.Load(), stored: cms, invalid: invalid, selectors: d.selectors}
	if v.cl == nil {
		var err error
		if v.cl, err = d.c.parseCluster(nil); err != nil {
			return clusterView[T]{}, err
		}
	}
	return v, nil
}

// selectorConfigMaps lists the selector ConfigMaps.
func (d *Direct[T]) selectorConfigMaps(ctx context.Context) ([]*corev1.ConfigMap, error) {
	list, err := d.client.CoreV1().ConfigMaps(d.c.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: d.c.selectorCMs.String()})
	if err != nil {
		return nil, fmt.Errorf("listing selector ConfigMaps in %s: %w", d.c.o.Namespace, err)
	}
	out := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// selectors reads the selector layers (clusterView.selectors).
func (d *Direct[T]) selectors(ctx context.Context) ([]*selectorLayer, error) {
	if d.c.o.Selectors == nil {
		return nil, nil
	}
	cms, err := d.selectorConfigMaps(ctx)
	if err != nil {
		return nil, err
	}
	return d.c.readSelectors(cms), nil
}

// get reads the ConfigMap namespace/name with a GET: nil when there is
// none.
func (d *Direct[T]) get(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := d.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, name, err)
	}
	return cm, nil
}

// ownOf returns the ConfigMaps of namespace ns among objs.
func ownOf(objs []runtime.Object, ns string) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Namespace == ns {
			out = append(out, cm)
		}
	}
	return out
}
