package bench

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// overlays are two versions of the namespace overlay; each iteration of a
// rebuild benchmark applies the other one, so that every rebuild sees a
// changed layer.
func overlays() [2]map[string]string {
	a := NamespaceData()
	b := maps.Clone(a)
	b["parallelism"], b["log-level"] = "16", "warn"
	return [2]map[string]string{a, b}
}

// BenchmarkCase2Rebuild rebuilds the effective configuration after the
// namespace layer changed. strata: convert the changed ConfigMap, merge it
// over the cluster layer with the tenant policy and provenance, decode,
// default, validate and hash (DryRun.Resolve; the cluster
// ConfigMap is unchanged, so its layer is reused as the resolver reuses
// it). Tekton-style: merge the raw maps and parse all 30 keys. viper and
// koanf: load the three layers into a new instance. knative has one layer:
// it parses the whole ConfigMap again.
func BenchmarkCase2Rebuild(b *testing.B) {
	cluster, ovl := ClusterData(), overlays()
	b.Run("strata", func(b *testing.B) {
		r := newResolver(b)
		clusterCM := ClusterConfigMap()
		var ns [2]*corev1.ConfigMap
		for i := range ns {
			ns[i] = ConfigMap(TenantNamespace, OverridesName, string(rune('1'+i)), OverrideLabels, ovl[i])
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s, err := r.Resolve(TenantNamespace, []runtime.Object{clusterCM, ns[i&1]})
			if err != nil || *s.Object.EnableRetries {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("tekton-style", func(b *testing.B) {
		t := NewTektonStyle()
		parsed, err := ParseFromMap(cluster)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p, _, err := t.ForNamespace(parsed, ovl[i&1])
			if err != nil || p.Bools[1] {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("viper", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := ViperLoad(cluster, ovl[i&1]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("koanf", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := KoanfLoad(cluster, ovl[i&1]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("knative", func(b *testing.B) {
		store := NewKnativeStore()
		var cms [2]*corev1.ConfigMap
		for i := range cms {
			data := maps.Clone(cluster)
			data["parallelism"] = ovl[i]["parallelism"]
			cms[i] = ConfigMap(SystemNamespace, KnativeConfigMapName, string(rune('1'+i)), nil, data)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			store.OnConfigChanged(cms[i&1])
			i++
		}
	})
}
