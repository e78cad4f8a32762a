package namespaced

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Direct resolves a namespace by reading every layer with GETs (and a
// LIST of the selector ConfigMaps) on each call, and caches no snapshot:
// for admission webhooks and one-shot commands. Concurrent calls share
// nothing mutable but the cluster ConfigMaps parsed last and a lossy
// table of the ConfigMaps already reported, both read and written
// without a lock, and the namespace ConfigMaps parsed last (at most
// 1,024, each by its version and data), behind a lock held only to look
// one up. It has no subscriptions and nothing to invalidate: what it
// keeps is used only for the very version and data it was made from.
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
// is about reading, or an invalid cluster ConfigMap where this resolver
// has read no valid one (unless StartOnDefaults): after one, an invalid
// cluster ConfigMap is reported and the last valid one applies.
func (d *Direct[T]) ForNamespace(ctx context.Context, ns string) (*Snapshot[T], error) {
	c, r := d.c, apiReader{d.client}
	v, err := d.cluster(ctx)
	if err == nil && v.invalid != nil && d.parse.last.Load() == nil && !c.o.StartOnDefaults {
		err = v.invalid
	}
	if err != nil {
		return nil, err
	}
	for _, cm := range v.stored {
		if d.reported.first("cluster:"+cm.Namespace+"/"+cm.Name, cm.ResourceVersion) {
			c.refused(d.events, cm, v.invalid)
		}
	}
	sels, err := v.selectors(ctx)
	if err != nil {
		return nil, err
	}
	ls, err := c.labels(ctx, r, ns)
	if err != nil {
		return nil, err
	}
	in := inputs[T]{cluster: v.cl, selectors: sels, labels: ls, system: c.system(ns), parsed: &d.parse.parsed}
	for _, name := range c.ownCMs {
		cm, err := r.ConfigMap(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		if cm != nil && c.isNamespaceLayer(cm) { // never in a system namespace
			in.cms = append(in.cms, cm)
		}
	}
	s, ignored, err := c.build(in)
	if err != nil {
		return nil, err
	}
	for _, ig := range ignored {
		if d.reported.first(ig.origin+":"+ig.cm.Namespace+"/"+ig.cm.Name, ig.cm.ResourceVersion) {
			c.ignored(d.events, ig)
		}
	}
	if d.events == nil {
		return s, nil
	}
	for _, rf := range refusals(s, in.selectors, in.cms, c.o.TenantKeysDoc) {
		if d.reported.first("refused:"+rf.cm.Namespace+"/"+rf.cm.Name, rf.cm.ResourceVersion) {
			d.events.warn(rf.cm, ReasonKeysRefused, "Merge", rf.note)
		}
	}
	for _, ct := range contestNotes(s, in.selectors) {
		if d.reported.first("contested:"+ct.cm.Namespace+"/"+ct.cm.Name+":"+ct.note, ct.cm.ResourceVersion) {
			d.events.warn(ct.cm, ReasonContestedKeys, "Merge", ct.note)
		}
	}
	return s, nil
}

// cluster reads the cluster ConfigMaps and returns their state, parsed
// unless they are the ones parsed last. When they are invalid it returns
// the last valid state this resolver parsed, or the defaults, with them
// and why.
func (d *Direct[T]) cluster(ctx context.Context) (clusterView[T], error) {
	r := apiReader{d.client}
	cms, err := d.c.clusters(ctx, r)
	if err != nil {
		return clusterView[T]{}, err
	}
	selectors := func(ctx context.Context) ([]*selectorLayer, error) { return d.c.selectors(ctx, r) }
	cl, invalid := d.parse.parse(d.c, cms)
	if invalid == nil {
		return clusterView[T]{cl: cl, selectors: selectors}, nil
	}
	v := clusterView[T]{cl: d.parse.last.Load(), stored: cms, invalid: invalid, selectors: selectors}
	if v.cl == nil {
		var err error
		if v.cl, err = d.c.parseCluster(nil); err != nil {
			return clusterView[T]{}, err
		}
	}
	return v, nil
}

// apiReader is a Reader that reads with a GET or a LIST on every call.
type apiReader struct{ client kubernetes.Interface }

func (a apiReader) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := a.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, name, err)
	}
	return cm, nil
}

func (a apiReader) ConfigMaps(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.ConfigMap, error) {
	list, err := a.client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the ConfigMaps labelled %s in %s: %w", selector, namespace, err)
	}
	out := make([]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (a apiReader) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	n, err := a.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return n.Labels, nil
}
