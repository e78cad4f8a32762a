package bench

import (
	"context"
	"testing"
)

// sink keeps the compiler from removing the reads.
var sink bool

// BenchmarkCase1Read reads one value of the effective configuration: a
// boolean the namespace overlay sets to false. strata reads a field of the
// namespace's typed snapshot (ForNamespace, the call a reconcile makes);
// viper and koanf look the key up in their merged maps; knative loads the
// typed value its store keeps for the ConfigMap (cluster data only:
// knative has no overlay).
func BenchmarkCase1Read(b *testing.B) {
	cluster, ns := ClusterData(), NamespaceData()
	b.Run("strata", func(b *testing.B) {
		r := resolvedCluster(b).r
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			s, _ := r.ForNamespace(ctx, TenantNamespace)
			sink = *s.Object.EnableRetries
		}
		if sink {
			b.Fatal("read true, want the overlay's false")
		}
	})
	b.Run("viper", func(b *testing.B) {
		v, err := ViperLoad(cluster, ns)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			sink = v.GetBool("enable-retries")
		}
		if sink {
			b.Fatal("read true, want the overlay's false")
		}
	})
	b.Run("koanf", func(b *testing.B) {
		k, err := KoanfLoad(cluster, ns)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			sink = k.Bool("enable-retries")
		}
		if sink {
			b.Fatal("read true, want the overlay's false")
		}
	})
	b.Run("knative", func(b *testing.B) {
		store := NewKnativeStore()
		store.OnConfigChanged(ConfigMap(SystemNamespace, KnativeConfigMapName, "1", nil, cluster))
		b.ReportAllocs()
		for b.Loop() {
			sink = store.UntypedLoad(KnativeConfigMapName).(*Plain).Bools[4]
		}
		if !sink {
			b.Fatal("read false, want the cluster's true")
		}
	})
}
