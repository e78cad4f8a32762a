package bench

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/layers/namespaced"
)

// TestSameEffectiveConfiguration checks that every loader the benchmarks
// compare arrives at the same effective configuration from the same data:
// otherwise a benchmark would compare different work.
func TestSameEffectiveConfiguration(t *testing.T) {
	cluster, ns := ClusterData(), NamespaceData()
	want := Expected(true)

	r := newResolver(t)
	s, err := r.Resolve(TenantNamespace, []runtime.Object{ClusterConfigMap(), NamespaceConfigMap(TenantNamespace)})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Object.Plain(); got != want {
		t.Errorf("strata:\n got %+v\nwant %+v", got, want)
	}
	if src, _ := s.Provenance().SourceOf("/enable-retries"); src.Origin != namespaced.OriginNamespace {
		t.Errorf("strata: /enable-retries comes from %v, want the namespace layer", src)
	}

	clusterParsed, err := ParseFromMap(cluster)
	if err != nil {
		t.Fatal(err)
	}
	p, warnings, err := NewTektonStyle().ForNamespace(clusterParsed, ns)
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	if *p != want {
		t.Errorf("tekton-style:\n got %+v\nwant %+v", *p, want)
	}

	v, err := ViperLoad(cluster, ns)
	if err != nil {
		t.Fatal(err)
	}
	if got := ViperPlain(v); got != want {
		t.Errorf("viper:\n got %+v\nwant %+v", got, want)
	}

	k, err := KoanfLoad(cluster, ns)
	if err != nil {
		t.Fatal(err)
	}
	if got := KoanfPlain(k); got != want {
		t.Errorf("koanf:\n got %+v\nwant %+v", got, want)
	}

	store := NewKnativeStore()
	store.OnConfigChanged(ConfigMap(SystemNamespace, KnativeConfigMapName, "1", nil, cluster))
	if got := *store.UntypedLoad(KnativeConfigMapName).(*Plain); got != Expected(false) {
		t.Errorf("knative (cluster only):\n got %+v\nwant %+v", got, Expected(false))
	}
}

// TestDefaultsAgree checks that an empty configuration defaults the same
// everywhere.
func TestDefaultsAgree(t *testing.T) {
	r := newResolver(t)
	s, err := r.Resolve(TenantNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Object.Plain(); got != DefaultPlain {
		t.Errorf("strata:\n got %+v\nwant %+v", got, DefaultPlain)
	}
	p, err := ParseFromMap(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if *p != DefaultPlain {
		t.Errorf("tekton-style: %+v", *p)
	}
}

func newResolver(tb testing.TB) *namespaced.DryRun[*Settings] {
	tb.Helper()
	o, err := ResolverOptions()
	if err != nil {
		tb.Fatal(err)
	}
	r, err := namespaced.NewDryRun(o)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
