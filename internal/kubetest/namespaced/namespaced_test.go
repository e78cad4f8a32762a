// Package namespaced_test runs layers/namespaced's modes against the
// real etcd and kube-apiserver that `make tools` builds, and fails,
// naming `make tools`, when they are missing. It lives outside layers/ so
// that `go test ./layers/...` needs nothing but Go.
package namespaced_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/stratacfg/strata/internal/kubetest"
	"github.com/stratacfg/strata/internal/testkind"
	"github.com/stratacfg/strata/internal/watchtest"
	"github.com/stratacfg/strata/layers/namespaced"
	"github.com/stratacfg/strata/layers/namespaced/tenancy"
)

// server is the etcd and kube-apiserver this package's tests share; each
// test works in namespaces of its own.
var server *kubetest.Server

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, &server)) }

var seq atomic.Int64

type jobDefaults = testkind.Defaults

var tenantLabels = map[string]string{"strata.test/layer": "namespace"}

// world is one test's namespaces on the real server: a system namespace
// with the cluster ConfigMap, and tenants.
type world struct {
	t      *testing.T
	c      kubernetes.Interface
	system string
	prefix string
}

func newWorld(t *testing.T) *world { return newWorldOn(t, server) }

// newWorldOn is newWorld on servers of the test's own.
func newWorldOn(t *testing.T, srv *kubetest.Server) *world {
	t.Helper()
	n := seq.Add(1)
	w := &world{t: t, c: srv.Client(t), system: fmt.Sprintf("ns-sys-%d", n), prefix: fmt.Sprintf("ns%d-", n)}
	w.namespace(w.system)
	w.put(w.system, "defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "100"})
	return w
}

func (w *world) namespace(name string) string {
	w.t.Helper()
	_, err := w.c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		w.t.Fatal(err)
	}
	return name
}

func (w *world) tenant(name string) string { return w.namespace(w.prefix + name) }

// put creates or updates a ConfigMap.
func (w *world) put(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	w.t.Helper()
	ctx := context.Background()
	cms := w.c.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: data}
	got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := cms.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			w.t.Fatal(gerr)
		}
		cm.ResourceVersion = cur.ResourceVersion
		got, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}

func (w *world) options() namespaced.Options[*jobDefaults] {
	w.t.Helper()
	kind, err := testkind.NewKind()
	if err != nil {
		w.t.Fatal(err)
	}
	return namespaced.Options[*jobDefaults]{
		Name: "strata-test", Kind: kind,
		Namespace: w.system, ClusterConfigMap: "defaults", NamespaceConfigMaps: []string{"overrides"},
		Labels: tenantLabels, TenantKeysDoc: "strata-test keys",
		Tenancy: tenancy.Policy{GateKey: "enforced-config-level", GateOpen: testkind.LevelNamespace, GateClosed: testkind.LevelCluster,
			LockKey: "non-overridable-fields"},
	}
}

// informerReader is what a caller that already runs informers hands a
// resolver built with NewFromReader: listers over its own informers, and
// handlers on them that call the resolver's Invalidate.
func (w *world) informerReader(ctx context.Context) (namespaced.Reader, func(*namespaced.Resolver[*jobDefaults])) {
	w.t.Helper()
	factory := informers.NewSharedInformerFactory(w.c, 0)
	cms, nss := factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces()
	cms.Informer()
	nss.Informer()
	factory.Start(ctx.Done())
	w.t.Cleanup(factory.Shutdown)
	factory.WaitForCacheSync(ctx.Done())
	// The hook returns once the informers have replayed what they hold
	// to the resolver.
	hook := func(r *namespaced.Resolver[*jobDefaults]) {
		for _, inf := range []cache.SharedIndexInformer{cms.Informer(), nss.Informer()} {
			reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: r.Invalidate, UpdateFunc: func(_, obj any) { r.Invalidate(obj) }, DeleteFunc: r.Invalidate})
			if err != nil {
				w.t.Fatal(err)
			}
			if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
				w.t.Fatal("the resolver's event handler did not sync")
			}
		}
	}
	return namespaced.ListerReader(cms.Lister(), nss.Lister()), hook
}

// resolver is what a resolver of every mode offers; a caching one is a
// *namespaced.Resolver, a Direct one a *namespaced.Direct.
type resolver interface {
	Start(context.Context) error
	Stop()
	ForNamespace(context.Context, string) (*namespaced.Snapshot[*jobDefaults], error)
	CheckConfigMap(context.Context, *corev1.ConfigMap) ([]string, error)
}

// start builds and starts a resolver of mode.
func (w *world) start(ctx context.Context, mode string) resolver {
	w.t.Helper()
	o := w.options()
	var r resolver
	var err error
	var hook func(*namespaced.Resolver[*jobDefaults])
	switch mode {
	case "lazy":
		r, err = namespaced.NewLazy(w.c, o)
	case "informer":
		r, err = namespaced.NewInformer(w.c, o)
	case "direct":
		r, err = namespaced.NewDirect(w.c, o)
	case "reader":
		var reader namespaced.Reader
		reader, hook = w.informerReader(ctx)
		r, err = namespaced.NewFromReader(reader, o)
	}
	if err != nil {
		w.t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(r.Stop)
	if hook != nil {
		hook(r.(*namespaced.Resolver[*jobDefaults]))
	}
	return r
}

// notifications records what Subscribe delivers.
type notifications struct {
	mu     sync.Mutex
	counts map[string]int
	errs   []string
}

// subscribe subscribes to r's changes; a Direct resolver has none.
func subscribe(r resolver) *notifications {
	n := &notifications{counts: map[string]int{}}
	cr, ok := r.(*namespaced.Resolver[*jobDefaults])
	if !ok {
		return n
	}
	cr.Subscribe(func(ns string, old, new *namespaced.Snapshot[*jobDefaults]) {
		got, err := r.ForNamespace(context.Background(), ns)
		n.mu.Lock()
		defer n.mu.Unlock()
		if err != nil || got != new {
			n.errs = append(n.errs, ns+": the new snapshot was not readable when the notification came")
		}
		n.counts[ns]++
	})
	return n
}

// settle waits until every namespace of want has been notified as often as
// it says, then a quiet moment more, and returns the counts.
func (n *notifications) settle(t *testing.T, want map[string]int) map[string]int {
	t.Helper()
	watchtest.Until(10*time.Second, func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		for ns, c := range want {
			if n.counts[ns] < c {
				return false
			}
		}
		return true
	})
	time.Sleep(300 * time.Millisecond) // a quiet period: a duplicate would come now, and nothing signals that none will
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.errs {
		t.Error(e)
	}
	out := n.counts
	n.counts, n.errs = map[string]int{}, nil
	return out
}

func timeoutOf(t *testing.T, r resolver, ns string) int64 {
	t.Helper()
	s, err := r.ForNamespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return *s.Object.DefaultTimeoutSeconds
}

// TestModesAgainstAPIServer runs each way of reading ConfigMaps against the
// real kube-apiserver: a namespace edit and a cluster edit are seen, each
// notifies once per cached namespace it affects, after the new snapshot
// is readable.
func TestModesAgainstAPIServer(t *testing.T) {
	for _, mode := range []string{"lazy", "informer", "reader", "direct"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := newWorld(t)
			a, b := w.tenant("a"), w.tenant("b")
			w.put(a, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "5"})
			r := w.start(ctx, mode)
			n := subscribe(r)
			if got := timeoutOf(t, r, a); got != 5 {
				t.Fatalf("a: timeout %d, want the override's 5", got)
			}
			if got := timeoutOf(t, r, b); got != 100 {
				t.Fatalf("b: timeout %d, want the cluster's 100", got)
			}
			cached := mode != "direct"
			wait := func(want int64, ns string) {
				t.Helper()
				if !watchtest.Until(10*time.Second, func() bool { return timeoutOf(t, r, ns) == want }) {
					t.Fatalf("%s: timeout %d, want %d", ns, timeoutOf(t, r, ns), want)
				}
			}

			w.put(a, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "7"})
			wait(7, a)
			if got := n.settle(t, map[string]int{a: b2i(cached)}); cached && (got[a] != 1 || len(got) != 1) || !cached && len(got) != 0 {
				t.Errorf("a namespace edit notified %v", got)
			}

			w.put(w.system, "defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "200"})
			wait(200, b)
			if got := n.settle(t, map[string]int{a: b2i(cached), b: b2i(cached)}); cached && (got[a] != 1 || got[b] != 1 || len(got) != 2) || !cached && len(got) != 0 {
				t.Errorf("a cluster edit notified %v", got)
			}
			if got := timeoutOf(t, r, a); got != 7 {
				t.Errorf("a after the cluster edit: %d, want its override 7", got)
			}
		})
	}
}

// TestReaderModeStartsNoWatch checks that a resolver built on a caller's
// cache opens no watch of its own: every ConfigMap and Namespace it reads
// comes through the Reader.
func TestReaderModeStartsNoWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newWorld(t)
	a := w.tenant("a")
	w.put(a, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "11"})
	reader, hook := w.informerReader(ctx)
	counting := &countingReader{Reader: reader}
	r, err := namespaced.NewFromReader(counting, w.options())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	hook(r)
	if got := timeoutOf(t, r, a); got != 11 {
		t.Fatalf("timeout %d", got)
	}
	reads := counting.n.Load()
	for range 100 {
		timeoutOf(t, r, a)
	}
	if counting.n.Load() != reads {
		t.Errorf("cached resolves read through the Reader: %d reads, then %d", reads, counting.n.Load())
	}
	// Many edits of one version apart: the last one wins.
	for i := range 20 {
		w.put(a, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": strconv.Itoa(20 + i)})
	}
	watchtest.Until(10*time.Second, func() bool { return timeoutOf(t, r, a) == 39 })
	if got := timeoutOf(t, r, a); got != 39 {
		t.Errorf("after 20 edits: timeout %d, want 39", got)
	}
}

type countingReader struct {
	namespaced.Reader
	n atomic.Int64
}

func (c *countingReader) ConfigMaps(ctx context.Context, ns string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	c.n.Add(1)
	return c.Reader.ConfigMaps(ctx, ns, sel)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTenantSeesWhyKeysWereRefused checks the Event a tenant reads in
// their own namespace when the policy refuses some of their keys: one per
// version of their ConfigMap, naming each key and why.
func TestTenantSeesWhyKeysWereRefused(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newWorld(t)
	w.put(w.system, "defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "100",
		"non-overridable-fields": "default-service-account"})
	a := w.tenant("a")
	cm := w.put(a, "overrides", tenantLabels, map[string]string{"default-timeout-seconds": "5", "default-service-account": "root", "max-timeout-seconds": "1"})
	r := w.start(ctx, "lazy")
	if _, err := r.ForNamespace(ctx, a); err != nil {
		t.Fatal(err)
	}
	found := w.eventNotes(ctx, cm, namespaced.ReasonKeysRefused)
	if len(found) != 1 {
		t.Fatalf("%d KeysRefused Events on %s/overrides: %q", len(found), a, found)
	}
	note := found[0]
	if !strings.HasPrefix(note, "Not applied (what tenants may set: strata-test keys): ") {
		t.Errorf("the Event's note %q does not point to what tenants may set", note)
	}
	for _, want := range []string{`key "default-service-account": locked by the operator`, `key "max-timeout-seconds": cluster-only key`} {
		if !strings.Contains(note, want) {
			t.Errorf("the Event's note %q lacks %q", note, want)
		}
	}
	if strings.Contains(note, "default-timeout-seconds") {
		t.Errorf("the note names an applied key: %q", note)
	}
}

// TestNoLockout stores an invalid cluster ConfigMap behind the webhook's
// back (written while a fail-open webhook was down) and checks, in every
// mode, that the ConfigMap check still judges each write on its own
// merits: a valid tenant layer is admitted with a warning saying what is
// stored, the fix is admitted, an invalid cluster ConfigMap and an
// invalid tenant layer are denied for their own faults; once what is
// stored is valid again, the warning goes. A Direct resolver that
// never saw a valid cluster ConfigMap judges against the defaults.
func TestNoLockout(t *testing.T) {
	for _, mode := range []string{"lazy", "informer", "reader", "direct", "direct, started on the invalid one"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := newWorld(t)
			a := w.tenant("a")
			var r resolver
			if mode != "direct, started on the invalid one" {
				r = w.start(ctx, mode)
				if got := timeoutOf(t, r, a); got != 100 {
					t.Fatalf("timeout %d, want the cluster's 100", got)
				}
			}
			w.put(w.system, "defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "ten"})
			if r == nil {
				r = w.start(ctx, "direct")
			}
			const stored = "judged against the last valid cluster configuration (or the defaults): the cluster ConfigMaps as stored are refused"
			check := func(cm *corev1.ConfigMap) ([]string, error) {
				t.Helper()
				var warnings []string
				var err error
				// Until the resolver has seen the invalid one.
				watchtest.Until(10*time.Second, func() bool {
					warnings, err = r.CheckConfigMap(ctx, cm)
					return err != nil || slices.ContainsFunc(warnings, func(w string) bool { return strings.HasPrefix(w, stored) })
				})
				return warnings, err
			}
			cluster := func(data map[string]string) *corev1.ConfigMap {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.system, Name: "defaults"}, Data: data}
			}
			tenant := func(data map[string]string) *corev1.ConfigMap {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "overrides", Labels: tenantLabels}, Data: data}
			}
			for _, tc := range []struct {
				name string
				cm   *corev1.ConfigMap
				err  string
				warn bool // judged against the last valid state, and said so
			}{
				{"a valid tenant layer", tenant(map[string]string{"default-timeout-seconds": "5"}), "", true},
				{"the fix, valid beside what is stored", cluster(map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "60"}), "", false},
				{"an invalid cluster ConfigMap", cluster(map[string]string{"default-timeout-seconds": "eleven"}), `"eleven"`, false},
				{"an invalid tenant layer", tenant(map[string]string{"default-timeout-seconds": "five"}), `"five"`, false},
			} {
				var warnings []string
				var err error
				if tc.warn {
					warnings, err = check(tc.cm) // once the resolver has seen what is stored
				} else {
					warnings, err = r.CheckConfigMap(ctx, tc.cm)
				}
				switch {
				case tc.err == "" && err != nil:
					t.Errorf("%s: denied: %v", tc.name, err)
				case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), `"ten"`)):
					t.Errorf("%s: %v, want a denial for its own %s only", tc.name, err, tc.err)
				case tc.warn && (len(warnings) == 0 || !strings.HasPrefix(warnings[0], stored) || !strings.Contains(warnings[0], `"ten"`)):
					t.Errorf("%s: warnings %q, want one saying what is stored", tc.name, warnings)
				case tc.err == "" && !tc.warn && len(warnings) > 0:
					t.Errorf("%s: warnings %q, want none", tc.name, warnings)
				}
			}
			// Stored back as it was in effect: no warning any more.
			w.put(w.system, "defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "100"})
			var warnings []string
			var err error
			if !watchtest.Until(10*time.Second, func() bool {
				warnings, err = r.CheckConfigMap(ctx, tenant(map[string]string{"default-timeout-seconds": "5"}))
				return err == nil && len(warnings) == 0
			}) {
				t.Fatalf("the stored ConfigMap restored: %q, %v", warnings, err)
			}
		})
	}
}

// TestContestedSelectorsAreReported: two selector ConfigMaps as specific
// as each other that set a key to different values, both applying to a
// namespace, contest it: the snapshot says so, and each ConfigMap gets a
// ContestedKeys Warning Event naming the key, the values and the winner.
func TestContestedSelectorsAreReported(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newWorld(t)
	w.put(w.system, "defaults", nil, map[string]string{"enforced-config-level": "namespace", "default-timeout-seconds": "100"})
	selectorLabels := map[string]string{"layer": "selector"}
	selector := func(name, sel, timeout string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.system, Labels: selectorLabels,
			Annotations: map[string]string{namespaced.DefaultSelectorAnnotation: sel}}, Data: map[string]string{"default-timeout-seconds": timeout}}
		got, err := w.c.CoreV1().ConfigMaps(w.system).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// by-team, created second, wins: by creation time, or by name when
	// both were created in one second.
	byEnv := selector("by-env", "env=prod", "30")
	byTeam := selector("by-team", "team=x", "20")
	ns := w.prefix + "contested"
	if _, err := w.c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "x", "env": "prod"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := w.options()
	o.Selectors = &namespaced.Selectors{Labels: selectorLabels}
	r, err := namespaced.NewLazy(w.c, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	s, err := r.ForNamespace(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Contested(); len(c) != 1 || c[0].Winner.Source.Name != w.system+"/by-team" || len(c[0].Others) != 1 || c[0].Others[0].Value != "30" {
		t.Fatalf("contested %+v", c)
	}
	for _, cm := range []*corev1.ConfigMap{byTeam, byEnv} {
		notes := w.eventNotes(ctx, cm, namespaced.ReasonContestedKeys)
		want := `key "default-timeout-seconds": selector ` + w.system + `/by-team (20) wins by creation time, then name, over selector ` + w.system + `/by-env (30), as specific`
		if len(notes) != 1 || !strings.Contains(notes[0], want) {
			t.Errorf("the ContestedKeys Events on %s: %q, want one saying %q", cm.Name, notes, want)
		}
	}
}

// eventNotes waits up to 10 s for Events of reason on cm and returns their
// notes.
func (w *world) eventNotes(ctx context.Context, cm *corev1.ConfigMap, reason string) []string {
	w.t.Helper()
	var notes []string
	watchtest.Until(10*time.Second, func() bool {
		evs, err := w.c.EventsV1().Events(cm.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		notes = nil
		for _, e := range evs.Items {
			if e.Reason == reason && e.Regarding.UID == cm.UID {
				notes = append(notes, e.Note)
			}
		}
		return len(notes) > 0
	})
	return notes
}
