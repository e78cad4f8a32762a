package namespaced_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/stratacfg/strata/internal/testkind"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// fakeOptions are the options of the resolvers these tests run on fake
// clients: the cluster ConfigMap ops/defaults, the namespace layer
// "overrides", the gate enforced-config-level.
func fakeOptions(t *testing.T) namespaced.Options[*jobDefaults] {
	t.Helper()
	kind, err := testkind.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	return namespaced.Options[*jobDefaults]{
		Kind: kind, Namespace: "ops", ClusterConfigMap: "defaults", NamespaceConfigMaps: []string{"overrides"},
		Labels:  tenantLabels,
		Tenancy: tenancy.Policy{GateKey: "enforced-config-level", GateOpen: testkind.LevelNamespace, GateClosed: testkind.LevelCluster},
	}
}

// TestFakeClientsets runs every way of reading ConfigMaps on client-go's
// fake clientsets, which give objects no resourceVersion: a namespace
// edit must still reach the snapshot, and notify once.
func TestFakeClientsets(t *testing.T) {
	o := fakeOptions(t)
	objects := func() []runtime.Object {
		return []runtime.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"},
				Data: map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "100"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels},
				Data: map[string]string{"default-timeout-seconds": "5"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "overrides", Labels: tenantLabels},
				Data: map[string]string{"default-timeout-seconds": "6"}},
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
				var r resolving[*jobDefaults]
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
				if cr, ok := r.(*namespaced.Resolver[*jobDefaults]); ok {
					cr.Subscribe(func(ns string, _, _ *namespaced.Snapshot[*jobDefaults]) { notified <- ns })
				}
				timeout := func() int64 { return timeoutOf(t, r, "team") }
				// edit sets the timeout of namespace ns's overrides.
				edit := func(ns, value string) {
					t.Helper()
					cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "overrides", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cm.Data["default-timeout-seconds"] = value
					if _, err := c.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if got := timeout(); got != 5 {
					t.Fatalf("timeout %d, want the override's 5", got)
				}
				edit("team", "7")
				if !watchtest.Until(5*time.Second, func() bool { return timeout() == 7 }) {
					t.Fatalf("the edit did not reach the snapshot in 5s: timeout %d", timeout())
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
				// A later edit of another namespace, seen in the same
				// stream: a second notification of the first edit would
				// come before its own.
				if got := timeoutOf(t, r, "other"); got != 6 {
					t.Fatalf("other: timeout %d", got)
				}
				edit("other", "8")
			wait:
				for {
					select {
					case ns := <-notified:
						if ns == "other" {
							break wait
						}
						t.Errorf("another notification of %s for one edit", ns)
					case <-time.After(5 * time.Second):
						t.Fatal("no notification of the other namespace's edit")
					}
				}
			})
		}
	}
}

// TestSharedWatchExpires ends Lazy mode's shared watch with 410 Gone while
// a cached namespace's ConfigMap changes unseen: the namespace is listed
// again and the change reaches its snapshot.
func TestSharedWatchExpires(t *testing.T) {
	o := fakeOptions(t)
	c := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"}, Data: map[string]string{"enforced-config-level": "namespace"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels}, Data: map[string]string{"default-timeout-seconds": "5"}},
	)
	// The shared watch is cluster-wide: hand it a watcher the test ends.
	shared := make(chan *watch.FakeWatcher, 4)
	c.PrependWatchReactor("configmaps", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if a.GetNamespace() != "" {
			return false, nil, nil
		}
		w := watch.NewFake()
		shared <- w
		return true, w, nil
	})
	r, err := namespaced.NewLazy(c, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	timeout := func() int64 { return timeoutOf(t, r, "team") }
	if got := timeout(); got != 5 {
		t.Fatalf("timeout %d", got)
	}
	first := <-shared
	// A change the watch never delivers, then the watch expires.
	cm, _ := c.CoreV1().ConfigMaps("team").Get(ctx, "overrides", metav1.GetOptions{})
	cm.Data["default-timeout-seconds"] = "9"
	if _, err := c.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	if !watchtest.Until(5*time.Second, func() bool { return timeout() == 9 }) {
		t.Fatalf("the change missed by the expired watch did not reach the snapshot: timeout %d", timeout())
	}
	select {
	case <-shared: // a new shared watch
	case <-time.After(5 * time.Second):
		t.Fatal("no new watch after the old one expired")
	}
}

// TestInformerKeepsOnlyLayersData: a tenant can put the resolver's labels
// on any number of ConfigMaps, so informer mode keeps the data of those
// whose name a namespace layer has, and of the others only their identity.
func TestInformerKeepsOnlyLayersData(t *testing.T) {
	bulk := strings.Repeat("x", 64<<10)
	c := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"}, Data: map[string]string{"enforced-config-level": "namespace"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "overrides", Labels: tenantLabels}, Data: map[string]string{"default-timeout-seconds": "5"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bulk-1", Labels: tenantLabels}, Data: map[string]string{"k": bulk}, BinaryData: map[string][]byte{"b": []byte(bulk)}},
	)
	r, err := namespaced.NewInformer(c, fakeOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if got := timeoutOf(t, r, "team"); got != 5 {
		t.Fatalf("timeout %d, want the namespace layer's 5", got)
	}
	held := map[string]*corev1.ConfigMap{}
	for _, cm := range namespaced.InformerConfigMaps(r) {
		held[cm.Name] = cm
	}
	if cm := held["overrides"]; cm == nil || cm.Data["default-timeout-seconds"] != "5" {
		t.Errorf("the namespace layer is not held with its data")
	}
	if cm := held["bulk-1"]; cm == nil {
		t.Errorf("a labelled ConfigMap of another name is not held")
	} else if cm.Data != nil || cm.BinaryData != nil || cm.Labels != nil {
		t.Errorf("a labelled ConfigMap of another name is held with %d data keys, %d binary keys and labels %v, want its identity only", len(cm.Data), len(cm.BinaryData), cm.Labels)
	}
}

// sectioned is a configuration of two sections, each read by a parser over
// a ConfigMap's data.
type sectioned struct{ Timeout, Retries string }

func sectionedOptions() namespaced.Options[*sectioned] {
	take := func(key string, into func(*sectioned, string)) func(map[string]string, *sectioned) error {
		return func(data map[string]string, s *sectioned) error {
			into(s, data[key])
			return nil
		}
	}
	return namespaced.Options[*sectioned]{
		Namespace: "ops", Labels: tenantLabels,
		Parsed: &namespaced.Parsed[*sectioned]{
			New: func() *sectioned { return &sectioned{} },
			Sections: []namespaced.Section[*sectioned]{
				{Name: "a", ClusterConfigMap: "config-a", NamespaceConfigMap: "own-a", Parse: take("timeout", func(s *sectioned, v string) { s.Timeout = v })},
				{Name: "b", ClusterConfigMap: "config-b", NamespaceConfigMap: "own-b", Parse: take("retries", func(s *sectioned, v string) { s.Retries = v })},
			},
		},
		Tenancy: tenancy.Policy{GateKey: "b/open", GateOpen: "yes", GateClosed: "no", Overridable: []string{"a/timeout", "b/retries"}},
	}
}

// TestParsedOnFakeClientsets follows two cluster ConfigMaps, one holding
// the gate, and a namespace's ConfigMaps of both sections, in every mode.
func TestParsedOnFakeClientsets(t *testing.T) {
	for _, mode := range []string{"lazy", "informer", "direct"} {
		t.Run(mode, func(t *testing.T) {
			c := fake.NewClientset(
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "config-a"}, Data: map[string]string{"timeout": "100"}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "config-b"}, Data: map[string]string{"open": "no", "retries": "1"}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "own-a", Labels: tenantLabels}, Data: map[string]string{"timeout": "5"}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "own-b", Labels: tenantLabels}, Data: map[string]string{"retries": "7"}},
			)
			var r resolving[*sectioned]
			var err error
			switch mode {
			case "lazy":
				r, err = namespaced.NewLazy(c, sectionedOptions())
			case "informer":
				r, err = namespaced.NewInformer(c, sectionedOptions())
			case "direct":
				r, err = namespaced.NewDirect(c, sectionedOptions())
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
			waitFor := func(want sectioned) {
				t.Helper()
				var got sectioned
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
			waitFor(sectioned{Timeout: "100", Retries: "1"}) // the gate closed
			update := func(ns, name string, data map[string]string) {
				t.Helper()
				cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cm.Data = data
				if _, err := c.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			update("ops", "config-b", map[string]string{"open": "yes", "retries": "1"})
			waitFor(sectioned{Timeout: "5", Retries: "7"})
			update("ops", "config-a", map[string]string{"timeout": "200"})
			waitFor(sectioned{Timeout: "5", Retries: "7"})
			update("team", "own-a", map[string]string{"timeout": "6"})
			waitFor(sectioned{Timeout: "6", Retries: "7"})
			update("team", "own-a", map[string]string{})
			waitFor(sectioned{Timeout: "200", Retries: "7"})
		})
	}
}

// TestDirectReportsSelectorRefusals resolves, through a Direct resolver,
// a namespace that two selector ConfigMaps as specific as each other
// apply to, one of which sets a key the policy keeps from selector
// layers: as a caching resolver does, it records a KeysRefused Event on
// that ConfigMap and a ContestedKeys Event on each, once per version.
func TestDirectReportsSelectorRefusals(t *testing.T) {
	o := fakeOptions(t)
	rec := record.NewFakeRecorder(16)
	o.Recorder = rec
	o.Selectors = &namespaced.Selectors{Labels: map[string]string{"layer": "selector"}}
	selector := func(name, timeout string, extra map[string]string) *corev1.ConfigMap {
		data := map[string]string{"default-timeout-seconds": timeout}
		maps.Copy(data, extra)
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name, Labels: map[string]string{"layer": "selector"},
			Annotations: map[string]string{namespaced.DefaultSelectorAnnotation: "tier=gold"}}, Data: data}
	}
	c := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "defaults"}, Data: map[string]string{"enforced-config-level": "namespace"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"tier": "gold"}}},
		selector("gold-a", "7", map[string]string{"enforced-config-level": "cluster"}),
		selector("gold-b", "8", nil))
	r, err := namespaced.NewDirect(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for range 2 {
		if _, err := r.ForNamespace(t.Context(), "team"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	refused, contested := 0, 0
	for _, e := range got {
		switch {
		case strings.HasPrefix(e, "Warning "+namespaced.ReasonKeysRefused) && strings.Contains(e, `key "enforced-config-level"`):
			refused++
		case strings.HasPrefix(e, "Warning "+namespaced.ReasonContestedKeys) && strings.Contains(e, `"default-timeout-seconds"`):
			contested++
		}
	}
	if refused != 1 || contested != 2 {
		t.Errorf("Events %q: want one KeysRefused on gold-a and one ContestedKeys on each selector ConfigMap", got)
	}
}
