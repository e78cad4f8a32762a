package namespaced_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stratacfg/strata/examples/controller/apis/defaults/v1alpha1"
	"github.com/stratacfg/strata/layers/namespaced"
)

// TestFakeClientsets runs every way of reading ConfigMaps on client-go's
// fake clientsets, which give objects no resourceVersion: a namespace
// edit must still reach the snapshot, and notify once.
func TestFakeClientsets(t *testing.T) {
	kind, err := v1alpha1.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	o := namespaced.Options[*jobDefaults]{
		Kind: kind, Namespace: "ops", ClusterConfigMap: "defaults", NamespaceConfigMaps: []string{"overrides"},
		Labels:  tenantLabels,
		Tenancy: namespaced.Tenancy{GateKey: "enforced-config-level", GateOpen: v1alpha1.LevelNamespace, GateClosed: v1alpha1.LevelCluster},
	}
	objects := func() []runtime.Object {
		return []runtime.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"},
				Data: map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "100"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels},
				Data: map[string]string{"default-timeout-seconds": "5"}},
		}
	}
	for _, fc := range []struct {
		name string
		new  func(...runtime.Object) kubernetes.Interface
	}{
		{"NewClientset", func(objs ...runtime.Object) kubernetes.Interface { return fake.NewClientset(objs...) }},
		{"NewSimpleClientset", func(objs ...runtime.Object) kubernetes.Interface { return fake.NewSimpleClientset(objs...) }},
	} {
		for _, mode := range []string{"lazy", "informer", "direct"} {
			t.Run(fc.name+"/"+mode, func(t *testing.T) {
				c := fc.new(objects()...)
				oo := o
				oo.Recorder = nil
				var r *namespaced.Resolver[*jobDefaults]
				var err error
				switch mode {
				case "lazy":
					r, err = namespaced.NewLazy(c, oo)
				case "informer":
					r, err = namespaced.NewInformer(c, oo)
				case "direct":
					r, err = namespaced.NewDirect(c, oo)
				}
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if err := r.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer r.Stop()
				notified := make(chan string, 8)
				r.Subscribe(func(ns string, _, _ *namespaced.Snapshot[*jobDefaults]) { notified <- ns })
				timeout := func() int64 {
					s, err := r.ForNamespace(ctx, "team")
					if err != nil {
						t.Fatal(err)
					}
					return *s.Object.DefaultTimeoutSeconds
				}
				if got := timeout(); got != 5 {
					t.Fatalf("timeout %d, want the override's 5", got)
				}
				cm, err := c.CoreV1().ConfigMaps("team").Get(ctx, "overrides", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cm.Data["default-timeout-seconds"] = "7"
				if _, err := c.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for timeout() != 7 {
					if time.Now().After(deadline) {
						t.Fatalf("the edit did not reach the snapshot in 5s: timeout %d", timeout())
					}
					time.Sleep(10 * time.Millisecond)
				}
				if mode == "direct" {
					return
				}
				select {
				case ns := <-notified:
					if ns != "team" {
						t.Errorf("notified %s", ns)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no notification")
				}
				time.Sleep(200 * time.Millisecond)
				if n := len(notified); n != 0 {
					t.Errorf("%d more notifications for one edit", n)
				}
			})
		}
	}
}
