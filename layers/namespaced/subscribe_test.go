package namespaced

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// notes records what Subscribe delivers, checking that each new snapshot
// is already what ForNamespace returns.
type notes struct {
	t  *testing.T
	r  *Resolver[*tenantConfig]
	mu sync.Mutex
	ns []string
}

func (n *notes) record(ns string, old, new *Snapshot[*tenantConfig]) {
	if got, err := n.r.ForNamespace(context.Background(), ns); err != nil || got != new {
		n.t.Errorf("%s: notified before the new snapshot was readable", ns)
	}
	if old == new {
		n.t.Errorf("%s: notified with the same snapshot", ns)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ns = append(n.ns, ns)
}

func (n *notes) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.ns
	n.ns = nil
	slices.Sort(out)
	return out
}

// readerResolver is a started NewFromReader resolver over objs with
// namespaces a, b and c cached, and what its subscription saw.
func readerResolver(t *testing.T, objs *objectReader, mutate func(*Options[*tenantConfig])) (*Resolver[*tenantConfig], *notes) {
	t.Helper()
	o := testOptions(t)
	if mutate != nil {
		mutate(&o)
	}
	r, err := NewFromReader(objs, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	for _, ns := range []string{"a", "b", "c"} {
		if _, err := r.ForNamespace(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	n := &notes{t: t, r: r}
	cancel := r.Subscribe(n.record)
	t.Cleanup(cancel)
	return r, n
}

func TestSubscribe(t *testing.T) {
	cluster := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "100"})
	objs := newObjectReader(cluster, tenantCM("a", map[string]string{"timeout": "5"}))
	r, n := readerResolver(t, objs, nil)
	ctx := context.Background()
	timeout := func(ns string) int64 {
		s, err := r.ForNamespace(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		return *s.Object.Timeout
	}

	// A namespace edit notifies that namespace, once.
	edited := tenantCM("a", map[string]string{"timeout": "7"})
	edited.ResourceVersion = "2"
	objs.set(edited)
	r.Invalidate(edited)
	if got := n.take(); fmt.Sprint(got) != "[a]" || timeout("a") != 7 {
		t.Errorf("namespace edit: notified %v, timeout %d", got, timeout("a"))
	}
	// Invalidating what did not change notifies nothing.
	r.Invalidate(edited)
	if got := n.take(); len(got) != 0 {
		t.Errorf("an unchanged ConfigMap notified %v", got)
	}
	// A cluster edit notifies every cached namespace, once each.
	cl := configMap("ops", "config", nil, map[string]string{"tenancy": "on", "timeout": "200"})
	cl.ResourceVersion = "2"
	objs.set(cl)
	r.Invalidate(cl)
	if got := n.take(); fmt.Sprint(got) != "[a b c]" || timeout("b") != 200 || timeout("a") != 7 {
		t.Errorf("cluster edit: notified %v, timeouts %d %d", got, timeout("a"), timeout("b"))
	}
	// A namespace ConfigMap created in a cached namespace.
	created := tenantCM("b", map[string]string{"timeout": "9"})
	objs.set(created)
	r.Invalidate(created)
	if got := n.take(); fmt.Sprint(got) != "[b]" || timeout("b") != 9 {
		t.Errorf("create: notified %v, timeout %d", got, timeout("b"))
	}
	// Deleted: the cluster value again.
	objs.del("b", "overrides")
	r.Invalidate(created)
	if got := n.take(); fmt.Sprint(got) != "[b]" || timeout("b") != 200 {
		t.Errorf("delete: notified %v, timeout %d", got, timeout("b"))
	}
	// Closing the gate notifies the namespaces it changes.
	closed := configMap("ops", "config", nil, map[string]string{"tenancy": "off", "timeout": "200"})
	closed.ResourceVersion = "3"
	objs.set(closed)
	r.Invalidate(closed)
	if got := n.take(); !slices.Contains(got, "a") || timeout("a") != 200 {
		t.Errorf("gate closed: notified %v, timeout %d", got, timeout("a"))
	}
	// An invalid cluster ConfigMap is refused: nothing changes.
	bad := configMap("ops", "config", nil, map[string]string{"tenancy": "maybe"})
	bad.ResourceVersion = "4"
	objs.set(bad)
	r.Invalidate(bad)
	if got := n.take(); len(got) != 0 || timeout("a") != 200 {
		t.Errorf("invalid cluster: notified %v, timeout %d", got, timeout("a"))
	}
}

func TestSubscribeCancel(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r, n := readerResolver(t, objs, nil)
	calls := 0
	cancel := r.Subscribe(func(string, *Snapshot[*tenantConfig], *Snapshot[*tenantConfig]) { calls++ })
	cancel()
	cm := tenantCM("a", map[string]string{"timeout": "3"})
	objs.set(cm)
	r.Invalidate(cm)
	if calls != 0 || len(n.take()) != 1 {
		t.Errorf("a cancelled subscriber was called %d times", calls)
	}
}

func TestSelectorChangeNotifiesWhatItMatches(t *testing.T) {
	withLabels := func(name string, ls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ls}}
	}
	sel := func(rv, selector, timeout string) *corev1.ConfigMap {
		cm := configMap("ops", "gold", map[string]string{"layer": "selector"}, map[string]string{"timeout": timeout})
		cm.ResourceVersion, cm.UID = rv, "gold-uid"
		cm.Annotations = map[string]string{DefaultSelectorAnnotation: selector}
		return cm
	}
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}),
		withLabels("a", map[string]string{"tier": "gold"}), withLabels("b", map[string]string{"tier": "silver"}), withLabels("c", nil),
		sel("1", "tier=gold", "300"))
	r, n := readerResolver(t, objs, func(o *Options[*tenantConfig]) {
		o.Selectors = &Selectors{Labels: map[string]string{"layer": "selector"}}
	})
	ctx := context.Background()
	if s, _ := r.ForNamespace(ctx, "a"); *s.Object.Timeout != 300 {
		t.Fatalf("a: timeout %d", *s.Object.Timeout)
	}
	next := sel("2", "tier in (gold,silver)", "300")
	if got := r.AffectedNamespaces(next); fmt.Sprint(got) != "[a b]" {
		t.Errorf("AffectedNamespaces of the selector: %v", got)
	}
	objs.set(next)
	r.Invalidate(next)
	// a's selector layer has a new version; b gets it; c is untouched.
	if got := n.take(); fmt.Sprint(got) != "[a b]" {
		t.Errorf("selector change notified %v", got)
	}
	// A namespace relabelled into a selector.
	objs.set(withLabels("c", map[string]string{"tier": "gold"}))
	r.Invalidate(withLabels("c", nil))
	if got := n.take(); fmt.Sprint(got) != "[c]" {
		t.Errorf("relabel notified %v", got)
	}
}

func TestAffectedNamespaces(t *testing.T) {
	objs := newObjectReader(configMap("ops", "config", nil, map[string]string{"tenancy": "on"}))
	r, _ := readerResolver(t, objs, nil)
	for _, tc := range []struct {
		cm   *corev1.ConfigMap
		want string
	}{
		{configMap("ops", "config", nil, nil), "[a b c]"},
		{tenantCM("a", nil), "[a]"},
		{tenantCM("zzz", nil), "[zzz]"}, // not cached: it still feeds zzz
		{tenantCM("kube-system", nil), "[]"},
		{configMap("a", "unrelated", nil, nil), "[]"},
		{configMap("ops", "other", nil, nil), "[]"},
	} {
		if got := r.AffectedNamespaces(tc.cm); fmt.Sprint(got) != tc.want {
			t.Errorf("AffectedNamespaces(%s/%s) = %v, want %s", tc.cm.Namespace, tc.cm.Name, got, tc.want)
		}
	}
}
