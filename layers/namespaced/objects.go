package namespaced

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// DryRun resolves namespaces from objects instead of a cluster:
// ConfigMaps (the cluster ConfigMap, selector ConfigMaps and namespace
// ConfigMaps, told apart by namespace, name and labels as a resolver
// would) and Namespaces (their labels, for selectors). It applies the same
// merge and policy as a Resolver, needs no client, records no Event and
// caches no snapshot: for dry runs, tools and tests. It keeps the cluster
// ConfigMap it parsed last, so resolving many namespaces under one cluster
// ConfigMap parses it once. Safe for concurrent use.
type DryRun[T any] struct {
	c    *core[T]
	last memo[T]
}

// NewDryRun returns a DryRun under options o, which it checks as the
// Resolver constructors do.
func NewDryRun[T any](o Options[T]) (*DryRun[T], error) {
	c, err := newCore(o)
	if err != nil {
		return nil, err
	}
	return &DryRun[T]{c: c}, nil
}

// Resolve resolves namespace ns from objs. An invalid cluster ConfigMap
// is an error, and so are two objects of one kind, namespace and name. As
// with objects from client-go's caches, the objects must not be changed
// afterwards: the same cluster ConfigMap seen again is not parsed again.
func (d *DryRun[T]) Resolve(ns string, objs []runtime.Object) (*Snapshot[T], error) {
	if err := unique(objs); err != nil {
		return nil, err
	}
	c, m := d.c, &d.last
	var few [4]*corev1.ConfigMap // the cluster ConfigMaps, without a map while they are the ones parsed last
	cluster := few[:0]
	var selectorCMs []*corev1.ConfigMap
	var own []*corev1.ConfigMap // the namespace layers of ns
	in := inputs[T]{system: c.system(ns)}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			if o.Name == ns {
				in.labels = o.Labels
			}
		case *corev1.ConfigMap:
			switch {
			case c.isCluster(o):
				cluster = append(cluster, o)
			case c.isSelector(o):
				selectorCMs = append(selectorCMs, o)
			case o.Namespace == ns && c.isNamespaceLayer(o):
				own = append(own, o)
			}
		}
	}
	st := m.lastOf(cluster)
	if st == nil {
		byName := make(map[string]*corev1.ConfigMap, len(cluster))
		for _, cm := range cluster {
			byName[cm.Name] = cm
		}
		var err error
		if st, err = m.parse(c, byName); err != nil {
			return nil, err
		}
	}
	if len(own) > 1 { // in NamespaceConfigMaps order; one of each name (unique)
		slices.SortFunc(own, func(a, b *corev1.ConfigMap) int {
			return slices.Index(c.ownCMs, a.Name) - slices.Index(c.ownCMs, b.Name)
		})
	}
	in.cluster, in.cms, in.parsed = st, own, &m.parsed
	in.selectors = c.readSelectors(selectorCMs)
	s, _, err := c.build(in)
	return s, err
}

// TenantKeys returns what tenants may set under the cluster ConfigMaps
// among objs; an invalid cluster ConfigMap is an error.
func (d *DryRun[T]) TenantKeys(objs []runtime.Object) (*tenancy.Keys, error) {
	if err := unique(objs); err != nil {
		return nil, err
	}
	cluster := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok && d.c.isCluster(cm) {
			cluster[cm.Name] = cm
		}
	}
	cl, err := d.last.parse(d.c, cluster)
	if err != nil {
		return nil, err
	}
	return tenantKeys(cl, d.c.display), nil
}

// unique refuses two objects of one kind, namespace and name: which one a
// cluster would hold is not known, and taking the last would hide it. It
// allocates nothing unless it refuses (a webhook calls it per request).
func unique(objs []runtime.Object) error {
	type id struct {
		typ      reflect.Type
		ns, name string
	}
	var small [16]id // a linear search while the objects are few
	ids := small[:0]
	var seen map[id]bool
	for _, o := range objs {
		acc, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		k := id{reflect.TypeOf(o), acc.GetNamespace(), acc.GetName()}
		if seen == nil && len(ids) == len(small) {
			seen = make(map[id]bool, len(objs))
			for _, k := range ids {
				seen[k] = true
			}
		}
		var twice bool
		if seen != nil {
			twice, seen[k] = seen[k], true
		} else {
			twice, ids = slices.Contains(ids, k), append(ids, k)
		}
		if twice {
			return fmt.Errorf("namespaced: %s %s/%s is given twice", strings.TrimPrefix(fmt.Sprintf("%T", o), "*v1."), k.ns, k.name)
		}
	}
	return nil
}

// memo keeps the cluster ConfigMap parsed last, for resolves that read it
// on every call (Direct mode, DryRun): it seldom changes; and namespace
// ConfigMaps parsed, by version. It takes no
// lock; two calls that parse a new version at once both parse it.
type memo[T any] struct {
	last atomic.Pointer[clusterState[T]]
	// parsed are the namespace ConfigMaps parsed last, by version.
	parsed parsedLayers
}

// parse returns the state of cms, the cluster ConfigMaps by name, parsing
// them unless they are the ones parsed last.
func (m *memo[T]) parse(c *core[T], cms map[string]*corev1.ConfigMap) (*clusterState[T], error) {
	if last := m.last.Load(); last != nil && sameConfigMaps(last.cms, cms) {
		return last, nil
	}
	st, err := c.parseCluster(cms)
	if err != nil {
		return nil, err
	}
	m.last.Store(st)
	return st, nil
}

// lastOf returns the state parsed last when cms, the cluster ConfigMaps
// (one of each name), are the ones it was parsed from; nil otherwise.
func (m *memo[T]) lastOf(cms []*corev1.ConfigMap) *clusterState[T] {
	last := m.last.Load()
	if last == nil || len(last.cms) != len(cms) {
		return nil
	}
	for _, cm := range cms {
		if !sameConfigMap(last.cms[cm.Name], cm) {
			return nil
		}
	}
	return last
}

// sameConfigMaps reports whether a and b, ConfigMaps by name, hold the
// same versions (sameConfigMap).
func sameConfigMaps(a, b map[string]*corev1.ConfigMap) bool {
	return maps.EqualFunc(a, b, sameConfigMap)
}

// sameConfigMap reports whether a and b are the same version of the same
// ConfigMap with the same data (nil: absent). Unless they are the same
// object, the data is compared even when the resourceVersions agree:
// objects handed to a DryRun need not come from a server.
func sameConfigMap(a, b *corev1.ConfigMap) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID && a.ResourceVersion == b.ResourceVersion &&
		len(a.BinaryData) == 0 && len(b.BinaryData) == 0 && maps.Equal(a.Data, b.Data)
}
