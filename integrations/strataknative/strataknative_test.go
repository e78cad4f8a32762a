package strataknative_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"knative.dev/pkg/configmap/informer"

	"github.com/stratacfg/strata/integrations/strataknative"
	"github.com/stratacfg/strata/layers/namespaced"
)

// config is a knative-style configuration: each section filled by a
// constructor over a ConfigMap.
type config struct {
	TimeoutMinutes int
	APIFields      string
}

func newDefaults(cm *corev1.ConfigMap) (int, error) {
	if v, ok := cm.Data["default-timeout-minutes"]; ok {
		return strconv.Atoi(v)
	}
	return 60, nil
}

func newFlags(cm *corev1.ConfigMap) (string, error) {
	if v, ok := cm.Data["enable-api-fields"]; ok {
		return v, nil
	}
	return "beta", nil
}

var labels = map[string]string{"pipeline-config": "true"}

func options() namespaced.Options[*config] {
	return namespaced.Options[*config]{
		Namespace: "pipelines",
		Labels:    labels,
		Parsed: &namespaced.Parsed[*config]{
			New: func() *config { return &config{} },
			Sections: []namespaced.Section[*config]{
				{Name: "config-defaults", ClusterConfigMap: "config-defaults", NamespaceConfigMap: "ns-config-defaults",
					Parse: namespaced.FromConfigMap("config-defaults", newDefaults, func(c *config, v int) { c.TimeoutMinutes = v })},
				{Name: "feature-flags", ClusterConfigMap: "feature-flags", NamespaceConfigMap: "ns-feature-flags",
					Parse: namespaced.FromConfigMap("feature-flags", newFlags, func(c *config, v string) { c.APIFields = v })},
			},
		},
		Tenancy: namespaced.Tenancy{GateKey: "feature-flags/per-namespace-configuration", GateOpen: "true", GateClosed: "false",
			Overridable: []string{"config-defaults/default-timeout-minutes"}},
	}
}

// start wires a resolver the way a knative controller would: its
// InformedWatcher of the system namespace, and a label-filtered ConfigMap
// informer for the namespace layers.
func start(t testing.TB, kc kubernetes.Interface) *namespaced.Resolver[*config] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmw := informer.NewInformedWatcher(kc, "pipelines")
	f := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "pipeline-config=true" }))
	cms := f.Core().V1().ConfigMaps()
	r, err := strataknative.New(cmw, namespaced.ListerReader(cms.Lister(), nil), options())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Informer().AddEventHandler(r.EventHandler()); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// TestClusterLayerFromTheWatcher follows the cluster ConfigMaps through
// the controller's own watcher (one of them absent at start), and a
// namespace's layer through its informer.
func TestClusterLayerFromTheWatcher(t *testing.T) {
	kc := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults"}, Data: map[string]string{"default-timeout-minutes": "50"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ns-config-defaults", Labels: labels}, Data: map[string]string{"default-timeout-minutes": "30"}},
	)
	r := start(t, kc)
	ctx := context.Background()
	eventually := func(want config) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			s, err := r.ForNamespace(ctx, "team")
			if err != nil {
				t.Fatal(err)
			}
			if *s.Object == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%+v, want %+v", *s.Object, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	eventually(config{TimeoutMinutes: 50, APIFields: "beta"}) // feature-flags absent: the gate closed
	if _, err := kc.CoreV1().ConfigMaps("pipelines").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags"},
		Data: map[string]string{"per-namespace-configuration": "true", "enable-api-fields": "alpha"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(config{TimeoutMinutes: 30, APIFields: "alpha"})
	if _, err := kc.CoreV1().ConfigMaps("team").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ns-config-defaults", Labels: labels},
		Data: map[string]string{"default-timeout-minutes": "20"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(config{TimeoutMinutes: 20, APIFields: "alpha"})
}

// TestForNamespace reads a namespace's configuration from the context a
// webhook's wrap-context function gave.
func TestForNamespace(t *testing.T) {
	r := start(t, fake.NewClientset())
	ctx := strataknative.WithResolver(context.Background(), r)
	s, err := strataknative.ForNamespace[*config](ctx, "team")
	if err != nil || s.Object.TimeoutMinutes != 60 {
		t.Fatalf("%v, %v", s, err)
	}
	if _, err := strataknative.ForNamespace[*config](context.Background(), "team"); err != strataknative.ErrNoResolver {
		t.Errorf("no resolver: %v", err)
	}
	if _, err := strataknative.ForNamespace[*config](ctx, ""); err == nil {
		t.Error("no namespace: no error")
	}
}

func Example() {
	kc := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults"},
		Data: map[string]string{"default-timeout-minutes": "50"}})
	ctx := context.Background()

	// The controller's watcher of its namespace, and an informer of the
	// labelled namespace ConfigMaps.
	cmw := informer.NewInformedWatcher(kc, "pipelines")
	f := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "pipeline-config=true" }))
	cms := f.Core().V1().ConfigMaps()
	r, err := strataknative.New(cmw, namespaced.ListerReader(cms.Lister(), nil), options())
	if err != nil {
		fmt.Println(err)
		return
	}
	cms.Informer().AddEventHandler(r.EventHandler())
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	cmw.Start(ctx.Done())
	r.Start(ctx)
	defer r.Stop()

	// A webhook's wrap-context function gives the resolver; the type's
	// SetDefaults reads its namespace's configuration, decoded once.
	wc := func(ctx context.Context) context.Context { return strataknative.WithResolver(ctx, r) }
	snap, _ := strataknative.ForNamespace[*config](wc(ctx), "team")
	fmt.Println("timeout:", snap.Object.TimeoutMinutes)
	// Output:
	// timeout: 50
}
