package namespaced

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/merge"
)

// clusterState is a parsed cluster ConfigMap. It is immutable.
type clusterState[T runtime.Object] struct {
	cm     *corev1.ConfigMap // nil: absent, defaults apply
	layer  *merge.Layer
	policy *clusterPolicy
	stack  *pipeline.Stack[T] // the cluster layer merged and decoded
	// base is the snapshot of a namespace with no layer of its own: the
	// cluster layer and the flags. Such namespaces share it.
	base *Snapshot[T]
}

// parseCluster reads the cluster ConfigMap (nil: absent) into its layer,
// the tenant policy it sets, and the snapshot it gives namespaces with no
// layer of their own, which shows that it decodes and validates. The error
// names the ConfigMap.
func (c *core[T]) parseCluster(cm *corev1.ConfigMap) (*clusterState[T], error) {
	st := &clusterState[T]{cm: cm}
	var data map[string]string
	name := c.o.Namespace + "/" + c.o.ClusterConfigMap
	if cm != nil {
		l, err := c.configMapLayer(cm, KindCluster)
		if err != nil {
			return nil, err
		}
		st.layer, data = l, cm.Data
	}
	p, err := c.o.Tenancy.policyFrom(data, c.fields)
	if err != nil {
		return nil, fmt.Errorf("cluster ConfigMap %s: %w", name, err)
	}
	st.policy = p
	var lower []*merge.Layer
	if st.layer != nil {
		lower = append(lower, st.layer)
	}
	upper := c.upper(nil)
	stack, obj, res, err := pipeline.NewStack[T](c.kind, upper, lower...)
	if err != nil {
		if cm == nil {
			return nil, fmt.Errorf("the defaults (no cluster ConfigMap %s): %w", name, err)
		}
		return nil, fmt.Errorf("cluster ConfigMap %s: %w", name, err)
	}
	st.stack = stack
	st.base = newSnapshot(obj, res, stack.Sources(), upper)
	return st, nil
}

// upper returns the layers above the cluster layer: optional ones (selector
// and namespace layers) and the flags.
func (c *core[T]) upper(optional []*merge.Layer) []*merge.Layer {
	out := slices.Clip(optional)
	if c.o.Flags != nil {
		out = append(out, c.o.Flags)
	}
	return out
}

// sameCluster reports whether cm holds what st was parsed from (nil:
// absent). Only data counts: a ConfigMap rewritten with equal data changes
// nothing.
func sameCluster[T runtime.Object](st *clusterState[T], cm *corev1.ConfigMap) bool {
	if st == nil || (cm == nil) != (st.cm == nil) {
		return false
	}
	return cm == nil || cm == st.cm || (maps.Equal(cm.Data, st.cm.Data) && len(cm.BinaryData) == 0 && len(st.cm.BinaryData) == 0)
}
