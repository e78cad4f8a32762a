package namespaced

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/target"
)

// selectorLayer is one parsed selector ConfigMap. It is immutable.
type selectorLayer struct {
	cm *corev1.ConfigMap
	// t is its layer on selectorLadder: its merge layer (nil when it is
	// invalid), its selector (labels.Nothing when it has no valid one)
	// and its rank, the selector's number of terms.
	t   *target.Layer
	err *LayerError // invalid: ignored wherever it matches
}

// selectorLadder ranks the selector layers, all of one class: fewest
// selector terms first (the most generic), then oldest, then by name.
var selectorLadder = target.Ladder{OriginSelector}

// readSelectors parses the selector ConfigMaps and orders them by
// selectorLadder. One that does not parse is kept, marked invalid, so
// that the namespaces it names report it; one with no valid selector
// matches nothing.
func (c *core[T]) readSelectors(cms []*corev1.ConfigMap) []*selectorLayer {
	if c.o.Selectors == nil {
		return nil
	}
	annotation := c.o.Selectors.Annotation
	byLayer := make(map[*target.Layer]*selectorLayer, len(cms))
	tls := make([]*target.Layer, 0, len(cms))
	for _, cm := range cms {
		sl := &selectorLayer{cm: cm, t: &target.Layer{Class: OriginSelector, Created: cm.CreationTimestamp.Time, Name: cm.Name,
			Selector: target.Selector{Labels: labels.Nothing()}}}
		text, ok := cm.Annotations[annotation]
		sel, err := labels.Parse(text)
		src := configMapSource(cm, OriginSelector)
		switch {
		case !ok:
			sl.err = &LayerError{Source: src, Err: fmt.Errorf("no %s annotation", annotation)}
		case err != nil:
			sl.err = &LayerError{Source: src, Err: fmt.Errorf("annotation %s: %w", annotation, err)}
		default:
			reqs, _ := sel.Requirements()
			sl.t.Selector.Labels, sl.t.Rank = sel, len(reqs)
			name, err := c.model.selectorName(cm.Annotations[c.o.Selectors.SectionAnnotation])
			if err == nil {
				sl.t.Layer, _, err = c.configMapLayerAs(cm, OriginSelector, name)
			} else {
				err = fmt.Errorf("annotation %s: %w", c.o.Selectors.SectionAnnotation, err)
			}
			if err != nil {
				sl.err = &LayerError{Source: src, Err: err}
			}
		}
		byLayer[sl.t] = sl
		tls = append(tls, sl.t)
	}
	sorted, _ := selectorLadder.Sort(tls) // one class, no dimensions: no error
	out := make([]*selectorLayer, len(sorted))
	for i, t := range sorted {
		out[i] = byLayer[t]
	}
	return out
}

// applies reports whether sl applies to a namespace whose labels are ls:
// a selector layer selects by labels alone.
func (sl *selectorLayer) applies(ls map[string]string) bool {
	return sl.t.Selector.Matches(target.Target{Labels: ls})
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

// slim returns a copy of cm with only what a layer needs of it: its
// identity, version, labels, data and, of its annotations, those named.
// The rest (managedFields, a last-applied annotation) can be larger than
// the data; a resolver that keeps the ConfigMaps of every cached
// namespace (Lazy) keeps this. With layers, one whose name is not among
// them keeps only its identity: a tenant can label any number.
func slim(cm *corev1.ConfigMap, layers []string, annotations ...string) *corev1.ConfigMap {
	if layers != nil && !slices.Contains(layers, cm.Name) {
		return &corev1.ConfigMap{TypeMeta: cm.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace,
			UID: cm.UID, ResourceVersion: cm.ResourceVersion}}
	}
	out := &corev1.ConfigMap{
		TypeMeta: cm.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID, ResourceVersion: cm.ResourceVersion,
			Labels: cm.Labels, CreationTimestamp: cm.CreationTimestamp},
		Data:       cm.Data,
		BinaryData: cm.BinaryData,
		Immutable:  cm.Immutable,
	}
	for _, a := range annotations {
		if v, ok := cm.Annotations[a]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[a] = v
		}
	}
	return out
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
		if sl.applies(ls) {
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
