package bench

import (
	"context"
	"testing"
)

// BenchmarkCase4Resolve is the per-namespace read a reconcile makes, with
// CachedNamespaces namespaces that each have an overlay, visited in turn.
// strata: ForNamespace on a resolver running against the real
// kube-apiserver, every namespace cached. Tekton-style: look the
// namespace's ConfigMap up in a lister-like map, then merge and parse
// again, on every call.
func BenchmarkCase4Resolve(b *testing.B) {
	b.Run("strata", func(b *testing.B) {
		c := resolvedCluster(b)
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s, err := c.r.ForNamespace(ctx, c.names[i%len(c.names)])
			if err != nil || *s.Object.EnableRetries {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("tekton-style", func(b *testing.B) {
		t := NewTektonStyle()
		cluster, err := ParseFromMap(ClusterData())
		if err != nil {
			b.Fatal(err)
		}
		lister := make(map[string]map[string]string, CachedNamespaces)
		names := make([]string, CachedNamespaces)
		for i := range names {
			names[i] = namespaceName(i)
			lister[names[i]+"/"+OverridesName] = NamespaceData()
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ns := names[i%len(names)]
			p, _, err := t.ForNamespace(cluster, lister[ns+"/"+OverridesName])
			if err != nil || p.Bools[1] {
				b.Fatal(err)
			}
			i++
		}
	})
}
