package strataknative_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/configmap/informer"
	pkgreconciler "knative.dev/pkg/reconciler"
	"knative.dev/pkg/webhook"

	"github.com/stratacfg/strata/integrations/strataknative"
	"github.com/stratacfg/strata/internal/testkind"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
	"github.com/stratacfg/strata/zpages"
)

// config is a knative-style configuration: each section filled by a
// constructor over a ConfigMap's data.
type config struct {
	TimeoutMinutes int
	APIFields      string
}

func newDefaults(data map[string]string) (int, error) {
	if v, ok := data["default-timeout-minutes"]; ok {
		return strconv.Atoi(v)
	}
	return 60, nil
}

func newFlags(data map[string]string) (string, error) {
	if v, ok := data["enable-api-fields"]; ok {
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
					Parse: namespaced.FromMap(newDefaults, func(c *config, v int) { c.TimeoutMinutes = v })},
				{Name: "feature-flags", ClusterConfigMap: "feature-flags", NamespaceConfigMap: "ns-feature-flags",
					Parse: namespaced.FromMap(newFlags, func(c *config, v string) { c.APIFields = v })},
			},
		},
		Tenancy: tenancy.Policy{GateKey: "feature-flags/per-namespace-configuration", GateOpen: "true", GateClosed: "false",
			Overridable: []string{"config-defaults/default-timeout-minutes"}},
	}
}

// start wires a resolver the way a knative controller would: built in
// the controller's constructor with the watcher of the system namespace,
// started while sharedmain starts the watcher.
func start(t testing.TB, kc kubernetes.Interface) *strataknative.Resolver[*config] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmw := informer.NewInformedWatcher(kc, "pipelines")
	r, err := strataknative.New(kc, cmw, options())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }() // before the watcher: it waits
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// TestClusterLayerFromTheWatcher follows the cluster ConfigMaps through
// the controller's own watcher (one of them absent at start), and a
// namespace's layer through the shared watch, read on its first use.
func TestClusterLayerFromTheWatcher(t *testing.T) {
	kc := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults"}, Data: map[string]string{"default-timeout-minutes": "50"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ns-config-defaults", Labels: labels}, Data: map[string]string{"default-timeout-minutes": "30"}},
	)
	r := start(t, kc)
	ctx := context.Background()
	eventually := func(want config) {
		t.Helper()
		var got config
		if !watchtest.Until(5*time.Second, func() bool {
			s, err := r.ForNamespace(ctx, "team")
			if err != nil {
				t.Fatal(err)
			}
			got = *s.Object
			return got == want
		}) {
			t.Fatalf("%+v, want %+v", got, want)
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

// cfgKey, toContext and fromContext are a knative project's own context
// of its configuration, as Tekton's config.ToContext and
// config.FromContextOrDefaults are.
type cfgKey struct{}

func toContext(ctx context.Context, s *namespaced.Snapshot[*config]) context.Context {
	return context.WithValue(ctx, cfgKey{}, s.Object)
}

func fromContext(ctx context.Context) *config {
	if c, ok := ctx.Value(cfgKey{}).(*config); ok {
		return c
	}
	return &config{TimeoutMinutes: 60, APIFields: "beta"}
}

// TestIntoContext puts a namespace's configuration where the project's
// readers look, and refuses an object with no namespace or a resolver
// that cannot read.
func TestIntoContext(t *testing.T) {
	kc := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags"}, Data: map[string]string{"per-namespace-configuration": "true"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ns-config-defaults", Labels: labels}, Data: map[string]string{"default-timeout-minutes": "30"}},
	)
	r := start(t, kc)
	ctx, err := strataknative.IntoContext(context.Background(), r, "team", toContext)
	if err != nil || fromContext(ctx).TimeoutMinutes != 30 {
		t.Fatalf("team: %v, %+v", err, fromContext(ctx))
	}
	if _, err := strataknative.IntoContext(context.Background(), r, "", toContext); err == nil {
		t.Error("no namespace: no error")
	}
	r.Stop()
	cold, err := strataknative.New(kc, informer.NewInformedWatcher(kc, "pipelines"), options())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strataknative.IntoContext(context.Background(), cold, "team", toContext); !errors.Is(err, namespaced.ErrNotStarted) {
		t.Errorf("a resolver not started: %v", err)
	}
}

// admissionController is what knative's admission controllers are, its
// Admit reading the project's context after its wrap-context function, as
// knative's defaulting and validation do.
type admissionController struct {
	wc        func(context.Context) context.Context
	seen      []string
	reconcile int
}

func (a *admissionController) Path() string                            { return "/defaulting" }
func (a *admissionController) Reconcile(context.Context, string) error { a.reconcile++; return nil }
func (a *admissionController) Promote(pkgreconciler.Bucket, func(pkgreconciler.Bucket, types.NamespacedName)) error {
	return nil
}
func (a *admissionController) Demote(pkgreconciler.Bucket) {}
func (a *admissionController) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	ctx = a.wc(ctx)
	a.seen = append(a.seen, fmt.Sprintf("%s:%d", req.Namespace, fromContext(ctx).TimeoutMinutes))
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// TestAdmission gives an admission controller each request's namespace's
// configuration through its wrap-context function, and keeps what the
// controller is besides.
func TestAdmission(t *testing.T) {
	kc := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags"}, Data: map[string]string{"per-namespace-configuration": "true"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ns-config-defaults", Labels: labels}, Data: map[string]string{"default-timeout-minutes": "30"}},
	)
	r := start(t, kc)
	base := func(ctx context.Context) context.Context {
		return context.WithValue(ctx, cfgKey{}, &config{TimeoutMinutes: 45})
	} // the store's
	inner := &admissionController{wc: strataknative.WrapContext(base, toContext)}
	wrapped := strataknative.Admission(r, inner)
	ac, ok := wrapped.(webhook.AdmissionController)
	if !ok || ac.Path() != "/defaulting" {
		t.Fatalf("%T is no admission controller", wrapped)
	}
	if _, ok := wrapped.(pkgreconciler.LeaderAware); !ok {
		t.Error("the wrapped controller is not leader-aware: its webhook configuration would not be reconciled")
	}
	if err := wrapped.Reconcile(context.Background(), "x"); err != nil || inner.reconcile != 1 {
		t.Errorf("Reconcile: %v, %d", err, inner.reconcile)
	}
	for _, ns := range []string{"team", "other", ""} {
		if resp := ac.Admit(context.Background(), &admissionv1.AdmissionRequest{Namespace: ns, Operation: admissionv1.Create}); !resp.Allowed {
			t.Errorf("%q refused: %+v", ns, resp.Result)
		}
	}
	// A namespace's own, the cluster's, and a cluster-scoped object's: the
	// store's, untouched.
	if got := strings.Join(inner.seen, " "); got != "team:30 other:60 :45" {
		t.Errorf("saw %s", got)
	}
	r.Stop()
	cold, err := strataknative.New(kc, informer.NewInformedWatcher(kc, "pipelines"), options())
	if err != nil {
		t.Fatal(err)
	}
	coldAC := strataknative.Admission(cold, inner).(webhook.AdmissionController)
	resp := coldAC.Admit(context.Background(), &admissionv1.AdmissionRequest{Namespace: "team", Operation: admissionv1.Update})
	if resp.Allowed || !strings.Contains(resp.Result.Message, "the configuration of namespace team cannot be read") {
		t.Errorf("a resolver not started: %+v", resp.Result)
	}
	// A delete reads no configuration: it passes as the controller says.
	if resp := coldAC.Admit(context.Background(), &admissionv1.AdmissionRequest{Namespace: "team", Operation: admissionv1.Delete}); !resp.Allowed {
		t.Errorf("a delete with the resolver not started: %+v", resp.Result)
	}
}

func Example() {
	kc := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults"},
		Data: map[string]string{"default-timeout-minutes": "50"}})
	ctx := context.Background()

	// In the controller's constructor: the resolver, beside the watcher
	// of its namespace.
	cmw := informer.NewInformedWatcher(kc, "pipelines")
	r, err := strataknative.New(kc, cmw, options())
	if err != nil {
		fmt.Println(err)
		return
	}
	// As sharedmain starts the watcher; Start waits for it.
	cmw.Start(ctx.Done())
	if err := r.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer r.Stop()

	// At a reconciler's entry, the object's namespace's configuration
	// goes into the project's own context, where its readers look.
	ctx, err = strataknative.IntoContext(ctx, r, "team", toContext)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("timeout:", fromContext(ctx).TimeoutMinutes)
	// Output:
	// timeout: 50
}

// TestStartWaitsForTheWatcher gives up when the watcher never delivers
// the cluster ConfigMaps, saying which it is waiting for.
func TestStartWaitsForTheWatcher(t *testing.T) {
	kc := fake.NewClientset()
	r, err := strataknative.New(kc, informer.NewInformedWatcher(kc, "pipelines"), options())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = r.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "the configmap.Watcher delivered none, of config-defaults, feature-flags") {
		t.Errorf("Start without the watcher: %v", err)
	}
	r.Stop()
}

// TestSelectorLayers follows a selector layer and the labels of the
// namespaces it selects through the resolver's own informers.
func TestSelectorLayers(t *testing.T) {
	kind, err := testkind.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	kc := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"tier": "bronze"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "strata-system", Name: "gold", Labels: map[string]string{"config.strata.dev/type": "selector"},
			Annotations: map[string]string{namespaced.DefaultSelectorAnnotation: "tier=gold"}},
			Data: map[string]string{"default-timeout-seconds": "40"}},
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmw := informer.NewInformedWatcher(kc, "strata-system")
	r, err := strataknative.New(kc, cmw, namespaced.Options[*testkind.Defaults]{
		Kind: kind, Namespace: "strata-system", ClusterConfigMap: "strata-defaults",
		NamespaceConfigMaps: []string{"strata-overrides"}, Labels: map[string]string{"config.strata.dev/type": "namespace"},
		Selectors: &namespaced.Selectors{Labels: map[string]string{"config.strata.dev/type": "selector"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	timeout := func() int64 {
		s, err := r.ForNamespace(ctx, "team")
		if err != nil {
			t.Fatal(err)
		}
		if s.Object.DefaultTimeoutSeconds == nil {
			return 0
		}
		return *s.Object.DefaultTimeoutSeconds
	}
	if got := timeout(); got == 40 {
		t.Errorf("a bronze namespace has the gold selector layer's timeout")
	}
	if _, err := kc.CoreV1().Namespaces().Update(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"tier": "gold"}}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchtest.Until(5*time.Second, func() bool { return timeout() == 40 })
	if got := timeout(); got != 40 {
		t.Errorf("a gold namespace: timeout %d, want the selector layer's 40", got)
	}
}

// TestStopWhileStarting stops a resolver whose Start waits for a watcher
// that never starts, or has not begun: either way Start returns an error.
func TestStopWhileStarting(t *testing.T) {
	kc := fake.NewClientset()
	r, err := strataknative.New(kc, informer.NewInformedWatcher(kc, "pipelines"), options())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background()) }()
	r.Stop()
	select {
	case err := <-started:
		if err == nil || !strings.Contains(err.Error(), "context canceled") && !strings.Contains(err.Error(), "was stopped") {
			t.Errorf("Start stopped: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start still waiting after Stop")
	}
}

// TestLogChanges logs a namespace's change with what it now is, and the
// z-pages show the configuration a namespace reads, as a controller's
// would.
func TestLogChanges(t *testing.T) {
	kc := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags"}, Data: map[string]string{"per-namespace-configuration": "true"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ns-config-defaults", Labels: labels}, Data: map[string]string{"default-timeout-minutes": "30"}},
	)
	r := start(t, kc)
	core, logs := observer.New(zap.InfoLevel)
	cancel := r.LogChanges(zap.New(core).Sugar())
	defer cancel()
	ctx := context.Background()
	if _, err := r.ForNamespace(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().ConfigMaps("team").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ns-config-defaults", Labels: labels},
		Data: map[string]string{"default-timeout-minutes": "20"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	watchtest.Eventually(t, 5*time.Second, func() string {
		if logs.FilterMessage("Namespace configuration changed").Len() == 0 {
			return "no line logged"
		}
		return ""
	})
	line := logs.FilterMessage("Namespace configuration changed").All()[0].ContextMap()
	if line["namespace"] != "team" || line["from"] == line["to"] || fmt.Sprint(line["overrides"]) != "[config-defaults/default-timeout-minutes]" ||
		!strings.Contains(fmt.Sprint(line["sources"]), "namespace team/ns-config-defaults") {
		t.Errorf("logged %v", line)
	}

	mux := http.NewServeMux()
	zpages.Install(mux, r.ZPages("pipelines-controller", nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/configz?namespace=team")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"TimeoutMinutes":20`) {
		t.Errorf("/configz?namespace=team: %d %s", resp.StatusCode, body)
	}
}

// fakeWatcher is a configmap.DefaultingWatcher the test drives: it
// records the observers and their defaults, and delivers what the test
// says when it says.
type fakeWatcher struct {
	observers map[string][]configmap.Observer
	defaults  map[string]corev1.ConfigMap
}

func (w *fakeWatcher) Watch(name string, o ...configmap.Observer) {
	w.observers[name] = append(w.observers[name], o...)
}

func (w *fakeWatcher) WatchWithDefault(cm corev1.ConfigMap, o ...configmap.Observer) {
	w.defaults[cm.Name] = cm
	w.Watch(cm.Name, o...)
}

func (w *fakeWatcher) Start(<-chan struct{}) error { return nil }

func (w *fakeWatcher) deliver(cm *corev1.ConfigMap) {
	for _, o := range w.observers[cm.Name] {
		o(cm)
	}
}

func (w *fakeWatcher) deliverDefault(name string) {
	cm := w.defaults[name]
	w.deliver(&cm)
}

// TestStartWaitsForWhatExists starts only once the watcher has delivered
// a cluster ConfigMap that exists as it is, not the default it delivers
// first; a Start that failed on an invalid cluster ConfigMap is called
// again once it is fixed; and a watcher of another namespace is refused.
func TestStartWaitsForWhatExists(t *testing.T) {
	flags := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags", ResourceVersion: "7"},
		Data: map[string]string{"per-namespace-configuration": "maybe"}}
	kc := fake.NewClientset(flags.DeepCopy())
	w := &fakeWatcher{observers: map[string][]configmap.Observer{}, defaults: map[string]corev1.ConfigMap{}}
	r, err := strataknative.New(kc, w, options())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ctx := context.Background()
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()
	w.deliverDefault("config-defaults") // there is none: the default stands
	w.deliverDefault("feature-flags")   // there is one: the default does not
	select {
	case err := <-started:
		t.Fatalf("started on the default of a ConfigMap that exists: %v", err)
	case <-time.After(100 * time.Millisecond): // a Start that waits cannot be told apart from one that is slow but for a pause
	}
	w.deliver(flags)
	if err := <-started; err == nil || !strings.Contains(err.Error(), `"maybe" is neither`) {
		t.Fatalf("an invalid cluster ConfigMap: %v", err)
	}
	fixed := flags.DeepCopy()
	fixed.ResourceVersion, fixed.Data["per-namespace-configuration"] = "8", "true"
	w.deliver(fixed)
	if err := r.Start(ctx); err != nil {
		t.Fatalf("started again once fixed: %v", err)
	}
	if err := r.Start(ctx); err == nil || !strings.Contains(err.Error(), "started already") {
		t.Errorf("a second start: %v", err)
	}

	if _, err := strataknative.New(kc, informer.NewInformedWatcher(kc, "elsewhere"), options()); err == nil || !strings.Contains(err.Error(), "watches namespace elsewhere") {
		t.Errorf("a watcher of another namespace: %v", err)
	}
}
