package strataknative_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/configmap/informer"
	"knative.dev/pkg/system"

	"github.com/stratacfg/strata/integrations/strataknative"
)

// TestStartBesideALabelFilteredWatcher starts beside the watcher sharedmain
// builds when SYSTEM_RESOURCE_LABEL is set: a cluster ConfigMap without
// the label is, to the watcher and every knative reader, absent (its
// default), and Start does not wait for the watcher to deliver it.
func TestStartBesideALabelFilteredWatcher(t *testing.T) {
	t.Setenv(system.ResourceLabelEnvKey, "app.kubernetes.io/part-of")
	kc := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags"},
		Data: map[string]string{"per-namespace-configuration": "true"}}) // not labelled for the watcher
	req, err := informer.FilterConfigByLabelExists(system.ResourceLabel())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmw := informer.NewInformedWatcher(kc, "pipelines", *req) // as SetupConfigMapWatchOrDie builds it
	r, err := strataknative.New(kc, cmw, options())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start beside a label-filtered watcher: %v", err)
	}
}

// TestStartWhenAClusterConfigMapGoesAway deletes a cluster ConfigMap after
// Start has asked the server for it and before the watcher's informer
// lists: the watcher then delivers only its default, which stands, and
// Start, asking the server again, does not wait for ever. The server
// gives the ConfigMap to Start's first read alone, and the informer never
// sees it, whichever of the two asks first (a reactor that made the
// informer's list wait for Start's read held the fake clientset's lock,
// which Start's read then waited for).
func TestStartWhenAClusterConfigMapGoesAway(t *testing.T) {
	kc := fake.NewClientset()
	var once sync.Once
	kc.PrependReactor("get", "configmaps", func(a k8stesting.Action) (handled bool, obj runtime.Object, err error) {
		if a.GetNamespace() != "pipelines" || a.(k8stesting.GetAction).GetName() != "feature-flags" {
			return false, nil, nil
		}
		once.Do(func() { // the operator deletes it just after Start read it
			handled, obj = true, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags"},
				Data: map[string]string{"per-namespace-configuration": "true"}}
		})
		return handled, obj, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmw := informer.NewInformedWatcher(kc, "pipelines")
	r, err := strataknative.New(kc, cmw, options())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// TestControllersOwnDefault: a controller that watches a cluster ConfigMap
// with a default of its own, registered after New (knative keeps the
// last), reads that default where the ConfigMap does not exist, and so
// does the resolver.
func TestControllersOwnDefault(t *testing.T) {
	kc := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmw := informer.NewInformedWatcher(kc, "pipelines")
	r, err := strataknative.New(kc, cmw, options())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	var mu sync.Mutex
	var seen map[string]string
	cmw.WatchWithDefault(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults"},
		Data: map[string]string{"default-timeout-minutes": "90"}}, func(cm *corev1.ConfigMap) {
		mu.Lock()
		defer mu.Unlock()
		seen = cm.Data
	})
	if err := cmw.Start(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := seen["default-timeout-minutes"]
	mu.Unlock()
	s, err := r.ForNamespace(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if got != "90" || s.Object.TimeoutMinutes != 90 {
		t.Errorf("the controller's observer got %q, the resolver %d: want its default, 90, in both", got, s.Object.TimeoutMinutes)
	}
}

// TestStartWaitsForAClusterConfigMapBehindTheControllersDefault: a
// default the controller gives the watcher for a cluster ConfigMap
// (registered after New, as New's doc allows) is delivered before the
// watcher has listed, without a resourceVersion; where the ConfigMap
// exists on the server, Start waits for the watcher to deliver it, and
// does not start on the controller's default.
//
// The watcher has a clientset of its own, whose list is held until Start
// asks the server for config-defaults or returns, so that nothing but
// Start's own wait decides what it starts on.
func TestStartWaitsForAClusterConfigMapBehindTheControllersDefault(t *testing.T) {
	real := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults", UID: "u1", ResourceVersion: "7"},
			Data: map[string]string{"default-timeout-minutes": "50"}}
	}
	watcherKC := fake.NewClientset(real())
	held := make(chan struct{})
	var release sync.Once
	watcherKC.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-held // only the watcher's informer uses this clientset
		return false, nil, nil
	})
	kc := fake.NewClientset(real())
	asked := make(chan struct{})
	var askedOnce sync.Once
	kc.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "pipelines" && a.(k8stesting.GetAction).GetName() == "config-defaults" {
			askedOnce.Do(func() { close(asked) })
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmw := informer.NewInformedWatcher(watcherKC, "pipelines")
	r, err := strataknative.New(kc, cmw, options())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	cmw.WatchWithDefault(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults"},
		Data: map[string]string{"default-timeout-minutes": "90"}}, func(*corev1.ConfigMap) {})
	watched := make(chan error, 1)
	go func() { watched <- cmw.Start(ctx.Done()) }()
	defer func() {
		release.Do(func() { close(held) })
		if err := <-watched; err != nil {
			t.Error(err)
		}
	}()
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()
	select {
	case err := <-started: // the watcher has not listed: it delivered defaults only
		if err != nil {
			t.Fatal(err)
		}
	case <-asked: // Start asks the server, and waits for the watcher
		release.Do(func() { close(held) })
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Start neither returned nor asked the server for config-defaults")
	}
	s, err := r.ForNamespace(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if s.Object.TimeoutMinutes != 50 {
		t.Errorf("just after Start, namespace team gets default-timeout-minutes %d, from %v: config-defaults on the server says 50", s.Object.TimeoutMinutes, s.Sources())
	}
}

// TestStartOnWhatAManualWatcherDelivers: a configmap.ManualWatcher
// delivers only what its caller hands OnChange, ConfigMaps built by hand
// without a resourceVersion, and no default: Start starts on what it
// delivered, though the server holds ConfigMaps of those names.
func TestStartOnWhatAManualWatcherDelivers(t *testing.T) {
	onServer := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: name, ResourceVersion: "7"}}
	}
	kc := fake.NewClientset(onServer("config-defaults"), onServer("feature-flags"))
	w := &configmap.ManualWatcher{Namespace: "pipelines"}
	r, err := strataknative.New(kc, w, options())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	w.OnChange(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "config-defaults"},
		Data: map[string]string{"default-timeout-minutes": "50"}})
	w.OnChange(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pipelines", Name: "feature-flags"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start, every cluster ConfigMap delivered by the ManualWatcher: %v", err)
	}
	s, err := r.ForNamespace(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if s.Object.TimeoutMinutes != 50 {
		t.Errorf("default-timeout-minutes %d, want the delivered 50", s.Object.TimeoutMinutes)
	}
}
