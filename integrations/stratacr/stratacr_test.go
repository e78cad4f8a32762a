package stratacr_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stratacfg/strata/integrations/stratacr"
	"github.com/stratacfg/strata/internal/testkind"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

var tenantLabels = map[string]string{"config.strata.dev/type": "namespace"}

func options(t *testing.T) namespaced.Options[*testkind.Defaults] {
	t.Helper()
	kind, err := testkind.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	return namespaced.Options[*testkind.Defaults]{
		Kind: kind, Namespace: "strata-system", ClusterConfigMap: "strata-defaults",
		NamespaceConfigMaps: []string{"strata-overrides"}, Labels: tenantLabels,
		Tenancy: tenancy.Policy{GateKey: "enforced-config-level", GateOpen: "namespace", GateClosed: "cluster"},
	}
}

func configMap(ns, name string, ls, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: ls}, Data: data}
}

// TestClientReader resolves through controller-runtime's fake client, whose
// objects carry the resourceVersions it gives them, and follows an edit
// told through Invalidate.
func TestClientReader(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		configMap("strata-system", "strata-defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "600"}),
		configMap("team-a", "strata-overrides", tenantLabels, map[string]string{"default-timeout-seconds": "60"}),
		configMap("team-a", "unlabelled", nil, map[string]string{"default-timeout-seconds": "1"}),
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "j1"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "j2"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "other"}},
	).Build()
	r, err := namespaced.NewFromReader(stratacr.ClientReader(c), options(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	s, err := r.ForNamespace(ctx, "team-a")
	if err != nil || *s.Object.DefaultTimeoutSeconds != 60 {
		t.Fatalf("team-a: %v, %v", s, err)
	}

	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "strata-overrides"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["default-timeout-seconds"] = "90"
	if err := c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	notified := make(chan string, 4)
	cancel := r.Subscribe(func(ns string, _, _ *namespaced.Snapshot[*testkind.Defaults]) { notified <- ns })
	defer cancel()
	r.Invalidate(&cm)
	select {
	case ns := <-notified:
		if ns != "team-a" {
			t.Errorf("notified %s", ns)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	if s, _ := r.ForNamespace(ctx, "team-a"); *s.Object.DefaultTimeoutSeconds != 90 {
		t.Errorf("after the edit: %d", *s.Object.DefaultTimeoutSeconds)
	}
}

// TestSource enqueues the Jobs of a namespace whose configuration changed,
// and only those.
func TestSource(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		configMap("strata-system", "strata-defaults", nil, map[string]string{"enforced-config-level": "namespace"}),
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "j1"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "j2"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "other"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	nr, err := namespaced.NewFromReader(stratacr.ClientReader(c), options(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := nr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer nr.Stop()
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := nr.ForNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	r := &stratacr.Resolver[*testkind.Defaults]{Resolver: nr}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := r.Source(c, &batchv1.JobList{}).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	cm := configMap("team-a", "strata-overrides", tenantLabels, map[string]string{"default-timeout-seconds": "5"})
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	nr.Invalidate(cm)
	var got []string
	watchtest.Until(5*time.Second, func() bool {
		for q.Len() > 0 {
			req, _ := q.Get()
			got = append(got, req.String())
			q.Done(req)
		}
		return len(got) >= 2
	})
	slices.Sort(got)
	if fmt.Sprint(got) != "[team-a/j1 team-a/j2]" || q.Len() != 0 {
		t.Errorf("enqueued %v (and %d more), want team-a's two Jobs", got, q.Len())
	}
}

func TestCacheByObject(t *testing.T) {
	by := stratacr.CacheByObject(options(t))
	var cms cache.ByObject
	for obj, b := range by {
		if _, ok := obj.(*corev1.ConfigMap); !ok {
			t.Errorf("an entry for %T", obj)
		}
		cms = b
	}
	own := cms.Namespaces["strata-system"]
	all := cms.Namespaces[cache.AllNamespaces]
	if own.LabelSelector == nil || !own.LabelSelector.Empty() {
		t.Errorf("the component's namespace: %v, want every ConfigMap", own.LabelSelector)
	}
	if all.LabelSelector == nil || !all.LabelSelector.Matches(labels.Set(tenantLabels)) || all.LabelSelector.Matches(labels.Set{}) {
		t.Errorf("other namespaces: %v, want the tenant labels only", all.LabelSelector)
	}
	// Cached slim: what a resolver reads stays, the rest goes.
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "strata-overrides", Labels: tenantLabels,
			Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: `{"data":{"k":"v"}}`, "config.strata.dev/namespace-selector": "team=a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data: map[string]string{"k": "v"},
	}
	if cms.Transform == nil {
		t.Fatal("no transform: ConfigMaps are cached whole")
	}
	got, err := cms.Transform(cm)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "strata-overrides", Labels: tenantLabels,
			Annotations: map[string]string{"config.strata.dev/namespace-selector": "team=a"}},
		Data: map[string]string{"k": "v"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cached as %+v, want %+v", got, want)
	}
	// A tenant's labelled ConfigMap of a name no layer has is cached as
	// its identity alone: a tenant may label any number of them, each
	// with up to 256 KiB of annotations and labels besides its data. In
	// the component's namespace every ConfigMap is the operator's
	// (cluster and selector layers) and is kept.
	for _, c := range []struct {
		ns, name string
		kept     bool
	}{{"team-a", "bulk-0", false}, {"strata-system", "bulk-0", true}, {"strata-system", "strata-defaults", true}} {
		cm := configMap(c.ns, c.name, map[string]string{"filler": "y"}, map[string]string{"k": strings.Repeat("x", 1<<10)})
		maps.Copy(cm.Labels, tenantLabels)
		cm.UID, cm.ResourceVersion = "u", "7"
		cm.Annotations = map[string]string{"filler": strings.Repeat("z", 1<<10)}
		cm.BinaryData = map[string][]byte{"b": []byte("x")}
		got, err := cms.Transform(cm.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		identity := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: c.name, UID: "u", ResourceVersion: "7"}}
		if kept := !reflect.DeepEqual(got, identity); kept != c.kept || kept && !reflect.DeepEqual(got, cm) {
			t.Errorf("%s/%s: cached as %+v; want it whole: %v", c.ns, c.name, got, c.kept)
		}
	}
}

// TestCacheByObjectParsed keeps the data of the ConfigMaps a Parsed
// kind's sections name, in every namespace, and only theirs.
func TestCacheByObjectParsed(t *testing.T) {
	o := namespaced.Options[*testkind.Defaults]{Namespace: "strata-system", Labels: tenantLabels,
		Parsed: &namespaced.Parsed[*testkind.Defaults]{Sections: []namespaced.Section[*testkind.Defaults]{
			{Name: "a", ClusterConfigMap: "a-cluster", NamespaceConfigMap: "a-ns"},
			{Name: "b", ClusterConfigMap: "b-cluster", NamespaceConfigMap: "b-ns"},
		}}}
	var transform func(any) (any, error)
	for _, b := range stratacr.CacheByObject(o) {
		transform = b.Transform
	}
	for name, kept := range map[string]bool{"a-ns": true, "b-ns": true, "a-cluster": false, "other": false} {
		got, err := transform(configMap("team-a", name, tenantLabels, map[string]string{"k": "v"}))
		if err != nil {
			t.Fatal(err)
		}
		if got.(*corev1.ConfigMap).Data != nil != kept {
			t.Errorf("team-a/%s: data cached %v, want %v", name, !kept, kept)
		}
	}
}

// TestNewRegistersMetrics builds a resolver on a manager: its metrics are
// in controller-runtime's registry, which the manager serves, under the
// resolver's name.
func TestNewRegistersMetrics(t *testing.T) {
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	o := options(t)
	o.Name = "metrics-test"
	if _, err := stratacr.New(mgr, o); err != nil {
		t.Fatal(err)
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	if !slices.Contains(names, "metrics_test_namespace_cache_size") {
		t.Errorf("controller-runtime's registry holds %v, not metrics_test_namespace_cache_size", names)
	}
	// A second resolver of the same name is an error, not a panic.
	if _, err := stratacr.New(mgr, o); err == nil || !strings.Contains(err.Error(), "metrics named metrics_test_… are registered already, by another resolver of that name: set Options.Name to tell the resolvers apart, or Options.Metrics") {
		t.Errorf("a second resolver of one name: %v", err)
	}
}

// TestNewWithNoEvents: with Options.NoEvents a resolver on a manager
// records no Event; New gives it the manager's recorder only where the
// options neither name one nor refuse them all.
func TestNewWithNoEvents(t *testing.T) {
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	o := options(t)
	o.Name = "no-events-test"
	o.NoEvents = true
	if _, err := stratacr.New(mgr, o); err != nil {
		t.Errorf("New with Options.NoEvents: %v", err)
	}
}
