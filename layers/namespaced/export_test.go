package namespaced

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/utils/clock"
)

// WithClock makes r, not yet started, time its pauses by c: a test steps
// a fake clock instead of sleeping.
func WithClock[T any](r *Resolver[T], c clock.WithTicker) { r.c.clock = c }

// OnRelist has r, a Lazy resolver not yet started, call h once each
// relist has ended and its result was put in what the namespace holds.
func OnRelist[T any](r *Resolver[T], h func(ns, rv string)) { r.src.(*lazyMode[T]).relisted = h }

// NamespaceLabels returns the labels of namespace ns as r, a started Lazy
// resolver with selector layers, holds them: what its next build reads.
func NamespaceLabels[T any](r *Resolver[T], ns string) map[string]string {
	ls, _ := r.src.(*lazyMode[T]).inf.NamespaceLabels(context.Background(), ns)
	return ls
}

// InformerConfigMaps returns the namespace ConfigMaps r, a started
// informer-mode resolver, holds in its informer's store.
func InformerConfigMaps[T any](r *Resolver[T]) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, obj := range r.src.(*informerMode[T]).inf.cm.GetStore().List() {
		out = append(out, obj.(*corev1.ConfigMap))
	}
	return out
}
