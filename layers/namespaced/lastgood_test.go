package namespaced

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestDirectKeepsLastGoodCluster: a Direct resolver (an admission
// webhook's) resolves under a valid cluster ConfigMap that then becomes
// invalid: the last good configuration applies, as CheckConfigMap's
// does, instead of every resolve (every admission) failing on an
// operator's typo.
func TestDirectKeepsLastGoodCluster(t *testing.T) {
	good := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"})
	c := fake.NewClientset(good)
	o := testOptions(t)
	o.NoEvents = true
	d, err := NewDirect(c, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if s, err := d.ForNamespace(ctx, "a"); err != nil || *s.Object.Timeout != 100 {
		t.Fatalf("%v, %v", s, err)
	}
	bad := good.DeepCopy()
	bad.Data = map[string]string{"tenancy": "maybe", "timeout": "200"}
	if _, err := c.CoreV1().ConfigMaps("ops").Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, err := d.ForNamespace(ctx, "a"); err != nil || *s.Object.Timeout != 100 {
		t.Errorf("under an invalid cluster ConfigMap: %v, %v; want the last good timeout, 100", s, err)
	}
	// A resolver that has read no valid one says why it cannot resolve.
	fresh, err := NewDirect(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := fresh.ForNamespace(ctx, "a"); err == nil || !strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("a first resolve under an invalid cluster ConfigMap: %v, %v", s, err)
	}
}

// TestRestartKeepsLastGoodCluster: the cluster ConfigMap becomes invalid
// while a resolver runs, and the last good configuration stays; the
// resolver is stopped and started again (leadership lost and won back):
// the configuration in effect stays too, with StartOnDefaults or
// without, instead of the defaults (or a failed Start) replacing it.
func TestRestartKeepsLastGoodCluster(t *testing.T) {
	for _, onDefaults := range []bool{true, false} {
		objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"}))
		r := cachedReader(t, objs, func(o *Options[*tenantConfig]) { o.StartOnDefaults = onDefaults })
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		timeout := func() int64 {
			s, err := r.ForNamespace(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			return *s.Object.Timeout
		}
		if got := timeout(); got != 100 {
			t.Fatalf("timeout %d, want 100", got)
		}
		bad := configMap("ops", "config", nil, map[string]string{"tenancy": "maybe", "timeout": "200"})
		bad.ResourceVersion = "2"
		objs.set(bad)
		r.Invalidate(bad)
		if err := r.WaitForSubscribers(ctx); err != nil {
			t.Fatal(err)
		}
		if got := timeout(); got != 100 {
			t.Fatalf("running: timeout %d under an invalid cluster ConfigMap, want the last good 100", got)
		}
		r.Stop()
		if err := r.Start(ctx); err != nil {
			t.Fatalf("StartOnDefaults %t: started again under an invalid cluster ConfigMap: %v", onDefaults, err)
		}
		if err := r.WaitForSubscribers(ctx); err != nil {
			t.Fatal(err)
		}
		if got := timeout(); got != 100 {
			t.Errorf("StartOnDefaults %t: started again: timeout %d, want the last good 100", onDefaults, got)
		}
		r.Stop()
	}
}
