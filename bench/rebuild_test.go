package bench

import (
	"maps"
	"strconv"
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

// freshOverlays are n namespace overlays, each with a parallelism of its
// own: a resolver has seen none of them when a loop over them comes back
// to the first.
func freshOverlays(n int) []map[string]string {
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = NamespaceData()
		out[i]["parallelism"] = strconv.Itoa(100 + i)
	}
	return out
}

// BenchmarkCase2Rebuild rebuilds the effective configuration after the
// namespace layer changed. strata: convert the changed ConfigMap, merge it
// over the cluster layer with the tenant policy and provenance, decode,
// default, validate and hash (DryRun.Resolve; the cluster ConfigMap is
// unchanged, so its layer is reused as the resolver reuses it), each time
// for keys and values it has not seen; strata-seen: the namespace
// ConfigMap alternates between two versions, whose parsed layers and
// configurations the resolver keeps. Tekton-style: merge the raw maps and
// parse all 30 keys, of the same overlays as strata's. viper and koanf:
// load the three layers into a new instance. knative has one layer: it
// parses the whole ConfigMap again.
func BenchmarkCase2Rebuild(b *testing.B) {
	cluster, ovl := ClusterData(), overlays()
	// More than a Stack keeps (4,096) and a DryRun keeps parsed (1,024):
	// an overlay comes back after both forgot it.
	fresh := freshOverlays(8192)
	strata := func(b *testing.B, cms []*corev1.ConfigMap) {
		r := newResolver(b)
		clusterCM := ClusterConfigMap()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s, err := r.Resolve(TenantNamespace, []runtime.Object{clusterCM, cms[i%len(cms)]})
			if err != nil || *s.Object.EnableRetries {
				b.Fatal(err)
			}
			i++
		}
	}
	b.Run("strata", func(b *testing.B) {
		cms := make([]*corev1.ConfigMap, len(fresh))
		for i := range cms {
			cms[i] = ConfigMap(TenantNamespace, OverridesName, strconv.Itoa(i+1), OverrideLabels, fresh[i])
		}
		strata(b, cms)
	})
	b.Run("strata-seen", func(b *testing.B) {
		var cms []*corev1.ConfigMap
		for i := range ovl {
			cms = append(cms, ConfigMap(TenantNamespace, OverridesName, strconv.Itoa(i+1), OverrideLabels, ovl[i]))
		}
		strata(b, cms)
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
			p, _, err := t.ForNamespace(parsed, fresh[i%len(fresh)])
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
