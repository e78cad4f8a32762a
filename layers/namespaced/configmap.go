package namespaced

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/merge"
)

// Source kinds of the Kubernetes layers.
const (
	// KindCluster is the cluster ConfigMap in the component's namespace.
	KindCluster = "cluster"
	// KindSelector is a ConfigMap in the component's namespace that
	// applies to the namespaces its label selector matches.
	KindSelector = "selector"
	// KindNamespace is a ConfigMap a namespace owns.
	KindNamespace = "namespace"
)

// configMapLayer turns the data of cm into a raw layer of the given kind.
// Every data key is one leaf: the key k is the pointer /k, and its string
// value is converted to JSON by the type of that member of the merge
// version, so "false" stays an explicit false. Keys that begin with "_"
// (an "_example" block) are documentation and are skipped. binaryData is
// refused.
//
// A ConfigMap over the size or key-count limit is refused whole before
// any value is converted. The error names the ConfigMap and the key.
func (c *core[T]) configMapLayer(cm *corev1.ConfigMap, kind string) (*merge.Layer, error) {
	src := ConfigMapSource(cm, kind)
	if len(cm.BinaryData) > 0 {
		return nil, fmt.Errorf("%s: binaryData is not configuration (keys %s)", src, text.Join(sortedKeys(cm.BinaryData), ", "))
	}
	if n := len(cm.Data); n > c.o.MaxConfigMapKeys {
		return nil, fmt.Errorf("%s: %d keys, over the limit of %d keys a ConfigMap may hold here", src, n, c.o.MaxConfigMapKeys)
	}
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	if size > c.o.MaxConfigMapBytes {
		return nil, fmt.Errorf("%s: %d bytes of data, over the limit of %d bytes a ConfigMap may hold here", src, size, c.o.MaxConfigMapBytes)
	}
	l := &merge.Layer{Source: src, Values: make(map[string]string, len(cm.Data))}
	var errs []string
	for k, v := range cm.Data {
		if strings.HasPrefix(k, "_") {
			continue
		}
		key, j, err := c.typ.ConvertMember(k, v)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		l.Values[key] = j
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%s: %s", src, text.Join(errs, "; "))
	}
	return l, nil
}

// ConfigMapSource is the provenance source of a ConfigMap: the kind, its
// namespace/name and its resourceVersion.
func ConfigMapSource(cm *corev1.ConfigMap, kind string) merge.Source {
	return merge.Source{Kind: kind, Name: cm.Namespace + "/" + cm.Name, Version: cm.ResourceVersion}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
