package greenhouse

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// Reader reads objects of a resource: a cluster through the API, or an
// informer's cache. Get returns nil and no error for an object that does
// not exist; List of a resource the cluster does not serve returns none
// (a Greenhouse cluster has no PluginOverride).
type Reader interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]*unstructured.Unstructured, error)
}

// Store is Objects over a Reader.
type Store struct {
	Ctx context.Context
	R   Reader
}

var _ Objects = Store{}

// get reads one object of kind into a Set and returns it from there.
func (s Store) get(kind, namespace, name string) (*Set, error) {
	u, err := s.R.Get(s.Ctx, Resources[kind], namespace, name)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	set := NewSet()
	if u == nil {
		return set, nil
	}
	j, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	if _, err := set.Add(kind, j); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, err)
	}
	return set, nil
}

// Plugin implements Objects.
func (s Store) Plugin(namespace, name string) (*Plugin, error) {
	set, err := s.get(KindPlugin, namespace, name)
	if err != nil {
		return nil, err
	}
	return set.Plugin(namespace, name)
}

// Definition implements Objects.
func (s Store) Definition(namespace string, ref PluginDefinitionReference) (*PluginDefinition, error) {
	kind := ref.Kind
	if kind == "" {
		kind = KindPluginDefinition
	}
	ns := namespace
	if kind == KindClusterPluginDefinition {
		ns = ""
	}
	set, err := s.get(kind, ns, ref.Name)
	if err != nil {
		return nil, err
	}
	return set.Definition(namespace, ref)
}

// PluginPreset implements Objects.
func (s Store) PluginPreset(namespace, name string) (*PluginPreset, error) {
	set, err := s.get(KindPluginPreset, namespace, name)
	if err != nil {
		return nil, err
	}
	return set.PluginPreset(namespace, name)
}

// Cluster implements Objects.
func (s Store) Cluster(namespace, name string) (*Cluster, error) {
	set, err := s.get(KindCluster, namespace, name)
	if err != nil {
		return nil, err
	}
	return set.Cluster(namespace, name)
}

// PluginOverrides implements Objects.
func (s Store) PluginOverrides(namespace string) ([]*PluginOverride, error) {
	set, err := s.list(KindPluginOverride, namespace)
	if err != nil {
		return nil, err
	}
	return set.PluginOverrides(namespace)
}

// ListPlugins implements Objects.
func (s Store) ListPlugins(namespace string) ([]*Plugin, error) {
	set, err := s.list(KindPlugin, namespace)
	if err != nil {
		return nil, err
	}
	return set.ListPlugins(namespace)
}

// ListPluginPresets implements Objects.
func (s Store) ListPluginPresets(namespace string) ([]*PluginPreset, error) {
	set, err := s.list(KindPluginPreset, namespace)
	if err != nil {
		return nil, err
	}
	return set.ListPluginPresets(namespace)
}

// list reads the objects of kind in namespace into a Set.
func (s Store) list(kind, namespace string) (*Set, error) {
	us, err := s.R.List(s.Ctx, Resources[kind], namespace)
	if err != nil {
		return nil, fmt.Errorf("listing %ss in %s: %w", kind, namespace, err)
	}
	set := NewSet()
	for _, u := range us {
		j, err := json.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		if _, err := set.Add(kind, j); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", kind, u.GetNamespace(), u.GetName(), err)
		}
	}
	return set, nil
}

// APIReader reads through the API server.
type APIReader struct{ Client dynamic.Interface }

// Get implements Reader.
func (a APIReader) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	var u *unstructured.Unstructured
	var err error
	if namespace == "" {
		u, err = a.Client.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	} else {
		u, err = a.Client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// List implements Reader.
func (a APIReader) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]*unstructured.Unstructured, error) {
	l, err := a.Client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // the cluster does not serve the resource
	}
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// CacheReader reads informers' caches, by resource.
type CacheReader map[schema.GroupVersionResource]cache.GenericLister

// Get implements Reader.
func (c CacheReader) Get(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	l, ok := c[gvr]
	if !ok {
		return nil, nil
	}
	var obj runtime.Object
	var err error
	if namespace == "" {
		obj, err = l.Get(name)
	} else {
		obj, err = l.ByNamespace(namespace).Get(name)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*unstructured.Unstructured), nil
}

// List implements Reader.
func (c CacheReader) List(_ context.Context, gvr schema.GroupVersionResource, namespace string) ([]*unstructured.Unstructured, error) {
	l, ok := c[gvr]
	if !ok {
		return nil, nil
	}
	objs, err := l.ByNamespace(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.(*unstructured.Unstructured)
	}
	return out, nil
}
