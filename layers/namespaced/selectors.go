package namespaced

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/merge"
)

// selectorLayer is one parsed selector ConfigMap. It is immutable.
type selectorLayer struct {
	cm       *corev1.ConfigMap
	layer    *merge.Layer
	selector labels.Selector
	terms    int
	err      *LayerError // invalid: ignored wherever it matches
}

// readSelectors parses the selector ConfigMaps and orders them most generic
// first: fewest selector terms, then oldest, then by name. One that does
// not parse is kept, marked invalid, so that the namespaces it names report
// it; one with no valid selector matches nothing.
func (c *core[T]) readSelectors(cms []*corev1.ConfigMap) []*selectorLayer {
	if c.o.Selectors == nil {
		return nil
	}
	annotation := c.o.Selectors.Annotation
	var out []*selectorLayer
	for _, cm := range cms {
		sl := &selectorLayer{cm: cm, selector: labels.Nothing()}
		text, ok := cm.Annotations[annotation]
		sel, err := labels.Parse(text)
		src := ConfigMapSource(cm, OriginSelector)
		switch {
		case !ok:
			sl.err = &LayerError{Source: src, Err: fmt.Errorf("no %s annotation", annotation)}
		case err != nil:
			sl.err = &LayerError{Source: src, Err: fmt.Errorf("annotation %s: %w", annotation, err)}
		default:
			sl.selector = sel
			reqs, _ := sel.Requirements()
			sl.terms = len(reqs)
			if sl.layer, _, err = c.configMapLayer(cm, OriginSelector); err != nil {
				sl.err = &LayerError{Source: src, Err: err}
			}
		}
		out = append(out, sl)
	}
	slices.SortFunc(out, func(a, b *selectorLayer) int {
		if a.terms != b.terms {
			return a.terms - b.terms
		}
		if c := a.cm.CreationTimestamp.Compare(b.cm.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.cm.Name, b.cm.Name)
	})
	return out
}

// isSelector reports whether cm is a selector ConfigMap.
func (c *core[T]) isSelector(cm *corev1.ConfigMap) bool {
	return c.selectorCMs != nil && cm.Namespace == c.o.Namespace && c.selectorCMs.Matches(labels.Set(cm.Labels))
}

// isCluster reports whether cm is a cluster ConfigMap.
func (c *core[T]) isCluster(cm *corev1.ConfigMap) bool {
	return cm.Namespace == c.o.Namespace && slices.Contains(c.clusterCMs, cm.Name)
}

// isNamespaceLayer reports whether cm is a namespace layer: one of
// NamespaceConfigMaps, carrying every required label, outside the system
// namespaces.
func (c *core[T]) isNamespaceLayer(cm *corev1.ConfigMap) bool {
	return slices.Contains(c.ownCMs, cm.Name) && c.nsLabels.Matches(labels.Set(cm.Labels)) && !c.system(cm.Namespace)
}

// ownConfigMaps puts the ConfigMaps of items that are namespace layers at
// their names' places in NamespaceConfigMaps, nil where there is none.
func (c *core[T]) ownConfigMaps(items []*corev1.ConfigMap) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, len(c.ownCMs))
	for _, cm := range items {
		if c.isNamespaceLayer(cm) {
			out[slices.Index(c.ownCMs, cm.Name)] = cm
		}
	}
	return out
}

// slim returns a copy of cm with only what a namespace layer needs of it:
// its identity, version, labels and data. The rest (managedFields, a
// last-applied annotation) can be larger than the data; a resolver that
// keeps the ConfigMaps of every cached namespace (Lazy) keeps this.
func slim(cm *corev1.ConfigMap) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: cm.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID, ResourceVersion: cm.ResourceVersion,
			Labels: cm.Labels, CreationTimestamp: cm.CreationTimestamp},
		Data:       cm.Data,
		BinaryData: cm.BinaryData,
		Immutable:  cm.Immutable,
	}
}

// present returns the ConfigMaps there are at places, in order.
func present(places []*corev1.ConfigMap) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, cm := range places {
		if cm != nil {
			out = append(out, cm)
		}
	}
	return out
}

// matching returns the selector layers of sls that apply to a namespace
// with labels ls.
func matching(sls []*selectorLayer, ls map[string]string) []*selectorLayer {
	var out []*selectorLayer
	for _, sl := range sls {
		if sl.selector.Matches(labels.Set(ls)) {
			out = append(out, sl)
		}
	}
	return out
}

// sameSelection reports whether the same selector layers, in the same
// versions and order, apply to a namespace with labels ls under a and b.
func sameSelection(a, b []*selectorLayer, ls map[string]string) bool {
	if sameSlice(a, b) {
		return true
	}
	return slices.EqualFunc(matching(a, ls), matching(b, ls), func(x, y *selectorLayer) bool {
		return x.cm.Name == y.cm.Name && sameConfigMap(x.cm, y.cm)
	})
}
