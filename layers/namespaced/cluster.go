package namespaced

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/merge"
)

// clusterState is the parsed cluster ConfigMaps. It is immutable.
type clusterState[T any] struct {
	cms    map[string]*corev1.ConfigMap // by name; a name absent: none, defaults apply
	layers []*merge.Layer
	policy *clusterPolicy
	stack  stack[T] // the cluster layers merged and built
	// base is the snapshot of a namespace with no layer of its own: the
	// cluster layers and the flags. Such namespaces share it.
	base *Snapshot[T]
}

// parseCluster reads the cluster ConfigMaps (by name; one absent holds
// nothing) into their layers, the tenant policy they set, and the
// snapshot they give namespaces with no layer of their own, which shows
// that they decode and validate. The error names the ConfigMaps.
func (c *core[T]) parseCluster(cms map[string]*corev1.ConfigMap) (*clusterState[T], error) {
	st := &clusterState[T]{cms: cms}
	data := map[string]string{} // the raw values of the cluster layers, by pointer
	for _, name := range c.clusterCMs {
		cm := cms[name]
		if cm == nil {
			continue
		}
		l, raw, err := c.configMapLayer(cm, OriginCluster)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configMapSource(cm, OriginCluster), err)
		}
		st.layers = append(st.layers, l)
		for k, v := range raw {
			data[c.model.keyOf(name, k)] = v
		}
	}
	p, policyErr := policyFrom(&c.o.Tenancy, data, c.model)
	upper := c.upper(nil)
	stack, obj, res, err := c.model.newStack(upper, st.layers...)
	switch {
	case err != nil && policyErr != nil:
		// Both, the parser's first: a key that is both a policy key and
		// the configuration's (Tekton's enable-api-fields) is refused by
		// its parser too, in the parser's words.
		return nil, fmt.Errorf("%w; %s: %w", c.stackError(cms, len(st.layers), err), c.clusterName(), policyErr)
	case policyErr != nil:
		return nil, fmt.Errorf("%s: %w", c.clusterName(), policyErr)
	case err != nil:
		return nil, c.stackError(cms, len(st.layers), err)
	}
	st.policy = p
	st.stack = stack
	st.base = newSnapshot(obj, res, nil, stack.Sources(), upper, c.display)
	return st, nil
}

// stackError names what err, the error of building the cluster layers
// (layers of them, from cms), is about: the defaults, the one cluster
// ConfigMap whose parser failed, or all of them.
func (c *core[T]) stackError(cms map[string]*corev1.ConfigMap, layers int, err error) error {
	if layers == 0 {
		return fmt.Errorf("the defaults (no %s): %w", c.clusterName(), err)
	}
	var se interface {
		clusterConfigMap() string
		Unwrap() error
	}
	if errors.As(err, &se) && cms[se.clusterConfigMap()] != nil {
		return fmt.Errorf("cluster ConfigMap %s/%s: %w", c.o.Namespace, se.clusterConfigMap(), se.Unwrap())
	}
	return fmt.Errorf("%s: %w", c.clusterName(), err)
}

// clusterName names the cluster ConfigMaps: "cluster ConfigMap ns/name",
// or "cluster ConfigMaps ns/a, ns/b".
func (c *core[T]) clusterName() string {
	names := make([]string, len(c.clusterCMs))
	for i, n := range c.clusterCMs {
		names[i] = c.o.Namespace + "/" + n
	}
	if len(names) == 1 {
		return "cluster ConfigMap " + names[0]
	}
	return "cluster ConfigMaps " + strings.Join(names, ", ")
}

// upper returns the layers above the cluster layers: optional ones
// (selector and namespace layers) and the flags.
func (c *core[T]) upper(optional []*merge.Layer) []*merge.Layer {
	out := slices.Clip(optional)
	if c.o.Flags != nil {
		out = append(out, c.o.Flags)
	}
	return out
}

// sameCluster reports whether cms holds what st was parsed from. Only
// data counts: a ConfigMap rewritten with equal data changes nothing.
func sameCluster[T any](st *clusterState[T], cms map[string]*corev1.ConfigMap) bool {
	if st == nil || len(st.cms) != len(cms) {
		return false
	}
	for name, cm := range cms {
		old, ok := st.cms[name]
		if !ok || !(cm == old || (maps.Equal(cm.Data, old.Data) && len(cm.BinaryData) == 0 && len(old.BinaryData) == 0)) {
			return false
		}
	}
	return true
}

// clusterView is the cluster configuration a check judges against: the
// state in effect (the last valid one, or the defaults) and, when the
// cluster ConfigMaps as stored are refused, them and why.
type clusterView[T any] struct {
	cl      *clusterState[T]
	stored  map[string]*corev1.ConfigMap
	invalid error
	// selectors reads the selector layers in effect, for the contests a
	// selector ConfigMap written would make: only a check of one reads
	// them.
	selectors func(context.Context) ([]*selectorLayer, error)
}
