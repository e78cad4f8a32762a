package stratacr_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stratacfg/strata/integrations/stratacr"
	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
)

// hookedInformer runs before once, just before the first event handler is
// added: what the informer's store holds then is what the new handler is
// replayed, and nothing it no longer holds is ever told to it.
type hookedInformer struct {
	toolscache.SharedIndexInformer
	once   sync.Once
	before func(store toolscache.Store)
}

func (h *hookedInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	h.once.Do(func() { h.before(h.GetStore()) })
	return h.SharedIndexInformer.AddEventHandler(handler)
}

// TestStartSeesADeletionBeforeItsHandler: a cluster ConfigMap deleted
// after the resolver read it through the manager's synced cache (Start's
// step 2) and before its event handler is added (step 3) is not among
// what the handler is replayed; once Ready, the resolver does not serve
// it.
func TestStartSeesADeletionBeforeItsHandler(t *testing.T) {
	srv := kubetest.Start(t)
	kc := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "strata-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().ConfigMaps("strata-system").Create(ctx, configMap("strata-system", "strata-defaults", nil,
		map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "600"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	deleted := make(chan struct{})
	newInformer := func(lw toolscache.ListerWatcher, obj kruntime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		inner := toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
		if _, ok := obj.(*corev1.ConfigMap); !ok {
			return inner
		}
		return &hookedInformer{SharedIndexInformer: inner, before: func(store toolscache.Store) {
			defer close(deleted)
			if err := kc.CoreV1().ConfigMaps("strata-system").Delete(ctx, "strata-defaults", metav1.DeleteOptions{}); err != nil {
				t.Error(err)
				return
			}
			if !watchtest.Until(30*time.Second, func() bool {
				_, exists, _ := store.GetByKey("strata-system/strata-defaults")
				return !exists
			}) {
				t.Error("the cache never saw the deletion")
			}
		}}
	}
	mgr, err := manager.New(srv.Config, manager.Options{
		Scheme:                 clientgoscheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{NewInformer: newInformer},
	})
	if err != nil {
		t.Fatal(err)
	}
	o := options(t)
	o.Name = "start-window-test"
	o.Metrics = namespaced.NewMetrics("start_window_test") // not registered: the test may run again
	r, err := stratacr.New(mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	<-deleted
	if err := r.WaitForSubscribers(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := r.ForNamespace(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, s := range snap.Sources() {
		sources = append(sources, s.String())
	}
	if strings.Contains(strings.Join(sources, " "), "strata-defaults") || *snap.Object.DefaultTimeoutSeconds == 600 {
		t.Errorf("the cluster ConfigMap was deleted before Ready, yet team-a is built from %v, with default-timeout-seconds %d", sources, *snap.Object.DefaultTimeoutSeconds)
	}
}
