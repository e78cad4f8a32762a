package layers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func BenchmarkTmpBuild(b *testing.B) {
	r := newTestResolver(b, nil)
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "120", "retries": "3", "verbose": "true", "stability": "beta"})
	ns := [2]*corev1.ConfigMap{tenantCM("team", map[string]string{"timeout": "30", "verbose": "false"}), tenantCM("team", map[string]string{"timeout": "31", "verbose": "false"})}
	st, _, err := r.parseCluster(cluster)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := r.build(inputs[*tenantConfig]{cluster: st, cms: ns[i&1 : i&1+1]}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("resolveobjects", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := r.ResolveObjects("team", []runtime.Object{cluster, ns[i&1]}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
