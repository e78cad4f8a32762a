package integration

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
	"github.com/stratacfg/strata/internal/watchtest"
)

// TestBesideGreenhouse runs `plugins run` beside a controller that writes
// Plugin.spec as Greenhouse's PluginPreset controller does
// (presetController), reconciling every preset twice a second besides on
// every change. For 60 s the PluginOverrides, the preset, its cluster
// overrides and a Cluster's labels are edited; then every Plugin holds
// what `plugins template` computes from the objects (the preset's values,
// the overrides over them), Greenhouse's controller keeps writing and the
// Plugins stay as they are (its writes pass through the webhook and
// change nothing: no loop), and the number of times each Plugin changed
// stays within twice the number of edits.
func TestBesideGreenhouse(t *testing.T) {
	const ns = "beside"
	c, a := runWithObjects(t, ns)
	changes := countChanges(t, c, ns)
	pc := startPresetController(t, c, ns, 500*time.Millisecond)
	plugins := []string{"monitoring-eu-de-1", "monitoring-eu-de-2", "cert-manager-us"}
	converged(t, c, ns, plugins)

	rng := rand.New(rand.NewPCG(33, 1))
	levels := []string{"debug", "error", "info", "trace"}
	edits := 0
	tick := time.NewTicker(750 * time.Millisecond) // pacing: edits spread over the minute, none waiting for the last to land
	defer tick.Stop()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); <-tick.C {
		switch edits % 5 {
		case 0:
			patch(t, c, greenhouse.KindPluginOverride, ns, "prod-clusters", fmt.Sprintf(`{"spec":{"overrides":[{"name":"retention","value":"%dd"},{"name":"logLevel","value":%q}]}}`,
				1+rng.IntN(90), levels[rng.IntN(len(levels))]))
		case 1:
			patch(t, c, greenhouse.KindPluginPreset, ns, "monitoring", fmt.Sprintf(`{"spec":{"plugin":{"optionValues":[{"name":"replicas","value":%d},{"name":"alerts.webhook","valueFrom":{"secret":{"name":"alerting","key":"webhook-url"}}},{"name":"logLevel","value":%q}]}}}`,
				1+rng.IntN(9), levels[rng.IntN(len(levels))]))
		case 2:
			patch(t, c, greenhouse.KindPluginPreset, ns, "monitoring", fmt.Sprintf(`{"spec":{"clusterOptionOverrides":[{"clusterName":"eu-de-%d","overrides":[{"name":"replicas","value":%d}]}]}}`,
				1+rng.IntN(2), 1+rng.IntN(9)))
		case 3:
			r := c.Resource(greenhouse.Resources[greenhouse.KindPluginOverride]).Namespace(ns)
			if err := r.Delete(context.Background(), "burst", metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
				apply(t, c, ns, object(t, fmt.Sprintf(`{"apiVersion":"greenhouse.sap/v1alpha1","kind":"PluginOverride","metadata":{"name":"burst"},
					"spec":{"pluginDefinitionNames":["kube-monitoring"],"overrides":[{"name":"extraLabels","path":"/burst","value":"%d"}]}}`, edits)))
			} else if err != nil {
				t.Fatal(err)
			}
		case 4:
			tier := []string{"prod", "qa"}[rng.IntN(2)]
			patch(t, c, greenhouse.KindCluster, ns, "eu-de-2", fmt.Sprintf(`{"metadata":{"labels":{"tier":%q}}}`, tier))
		}
		edits++
	}
	converged(t, c, ns, plugins)

	// Quiet: Greenhouse's controller reconciles every preset again and
	// again, writing each Plugin that differs from its preset (each one an
	// override changed); not one Plugin changes.
	before := changes.snapshot()
	_, reconciles, _ := pc.counts()
	waitFor(t, "ten more reconciles of the preset", func() bool { _, n, _ := pc.counts(); return n >= reconciles+10 })
	if after := changes.snapshot(); !maps.Equal(before, after) {
		t.Errorf("Plugins changed with nothing edited (a loop): before %v, after %v", before, after)
	}

	writes, reconciles, errs := pc.counts()
	if len(errs) > 0 {
		t.Logf("the preset controller's errors, each retried: %v", errs)
	}
	final := changes.snapshot()
	for _, p := range plugins {
		if final[p] > 2*edits {
			t.Errorf("%s changed %d times for %d edits: more than twice", p, final[p], edits)
		}
	}
	t.Logf("%d edits over 60 s; Plugin changes %v; writes Greenhouse's controller issued %v over %d reconciles; Plugins admitted again by plugins run: %v",
		edits, final, writes, reconciles, a.counter(t, "plugins_readmitted_total"))
}

// changeCounter counts the changes of each Plugin of a namespace, as a
// watch sees them.
type changeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (cc *changeCounter) snapshot() map[string]int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return maps.Clone(cc.n)
}

func countChanges(t *testing.T, c dynamic.Interface, ns string) *changeCounter {
	t.Helper()
	cc := &changeCounter{n: map[string]int{}}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c, 0, ns, nil)
	factory.ForResource(greenhouse.Resources[greenhouse.KindPlugin]).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			o, n := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
			if o.GetResourceVersion() != n.GetResourceVersion() {
				cc.mu.Lock()
				cc.n[n.GetName()]++
				cc.mu.Unlock()
			}
		},
	})
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	return cc
}

// converged waits until each of plugins holds, as stored, what `plugins
// template` computes for it from the objects, less the definition's
// defaults (Greenhouse's own webhook writes those).
func converged(t *testing.T, c dynamic.Interface, ns string, plugins []string) {
	t.Helper()
	objs := greenhouse.Store{Ctx: context.Background(), R: greenhouse.APIReader{Client: c}}
	var why string
	if watchtest.Until(30*time.Second, func() bool {
		for _, p := range plugins {
			res, err := greenhouse.Effective(objs, ns, p, greenhouse.Settings{})
			if err != nil {
				why = err.Error()
				return false
			}
			want := map[string]string{}
			for _, v := range res.OptionValues {
				if vs := res.Provenance[v.Name]; strings.HasSuffix(vs.Source, " (default)") && len(vs.Paths) == 0 {
					continue
				}
				want[v.Name] = valueString(v)
			}
			got, _, _ := pluginState(t, c, ns, p)
			if !maps.Equal(got, want) {
				why = fmt.Sprintf("%s holds %v, and its layers give %v", p, got, want)
				return false
			}
			_, applied, _ := pluginState(t, c, ns, p)
			if !slices.Equal(applied, res.AppliedOverrides) {
				why = fmt.Sprintf("%s says %v applied, and %v apply", p, applied, res.AppliedOverrides)
				return false
			}
		}
		return true
	}) {
		return
	}
	t.Fatalf("not converged within 30 s: %s", why)
}

// object decodes one JSON object.
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	return u
}
