package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

// presetController writes Plugins from PluginPresets as Greenhouse's own
// PluginPreset controller does at its newest release, v0.16.0
// (internal/controller/plugin/pluginpreset_controller.go,
// reconcilePluginPreset and pluginSpecFromPluginPreset, with
// pluginpreset_values_resolver.go's applyOverridesToPreset; Greenhouse's
// module cannot be fetched here, so its steps are taken again):
//
//   - for each Cluster of the preset's namespace its clusterSelector
//     selects, the Plugin PRESET-CLUSTER; one of that name without the
//     preset's label is not the preset's and is skipped;
//   - controllerutil.CreateOrUpdate's steps: read the Plugin, set the
//     preset's label, the preset as its controlling owner, and its spec
//     from the preset with the cluster's clusterOptionOverrides entry
//     merged in (an option replaced by name, or appended), and write it
//     when it then differs from what was read;
//   - expressions are not evaluated (Greenhouse's
//     pluginPreset.expressionEvaluationEnabled is off by default), and
//     valueFrom keeps its secret only, as ConvertToPluginOptionValues
//     does;
//   - a preset is reconciled when it changes, when a Plugin it owns
//     changes generation, when a Cluster's labels change, and every
//     resync period (the manager's resync, made short here so that a
//     loop would show).
//
// It counts the writes it issues per Plugin.
type presetController struct {
	c      dynamic.Interface
	ns     string
	queue  workqueue.TypedRateLimitingInterface[string]
	resync time.Duration

	mu         sync.Mutex
	writes     map[string]int // Plugin name → creates and updates issued
	reconciles int
	errs       []error
}

func startPresetController(t *testing.T, c dynamic.Interface, ns string, resync time.Duration) *presetController {
	t.Helper()
	pc := &presetController{c: c, ns: ns, resync: resync, writes: map[string]int{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	ctx, cancel := context.WithCancel(context.Background())
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c, 0, ns, nil)
	presets := factory.ForResource(greenhouse.Resources[greenhouse.KindPluginPreset])
	presets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pc.queue.Add(obj.(*unstructured.Unstructured).GetName()) },
		UpdateFunc: func(_, obj any) { pc.queue.Add(obj.(*unstructured.Unstructured).GetName()) },
	})
	factory.ForResource(greenhouse.Resources[greenhouse.KindPlugin]).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			o, n := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
			if preset := n.GetLabels()[greenhouse.LabelPluginPreset]; preset != "" && o.GetGeneration() != n.GetGeneration() {
				pc.queue.Add(preset)
			}
		},
	})
	factory.ForResource(greenhouse.Resources[greenhouse.KindCluster]).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { pc.all(presets.Lister()) },
		UpdateFunc: func(old, obj any) {
			if !maps.Equal(old.(*unstructured.Unstructured).GetLabels(), obj.(*unstructured.Unstructured).GetLabels()) {
				pc.all(presets.Lister())
			}
		},
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			name, quit := pc.queue.Get()
			if quit {
				return
			}
			if err := pc.reconcile(ctx, name); err != nil && ctx.Err() == nil {
				pc.mu.Lock()
				pc.errs = append(pc.errs, err)
				pc.mu.Unlock()
				pc.queue.AddRateLimited(name)
			} else {
				pc.queue.Forget(name)
			}
			pc.queue.Done(name)
		}
	})
	wg.Go(func() {
		tick := time.NewTicker(resync)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				pc.all(presets.Lister())
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		pc.queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	})
	return pc
}

// all enqueues every preset.
func (pc *presetController) all(l cache.GenericLister) {
	objs, _ := l.List(labels.Everything())
	for _, o := range objs {
		pc.queue.Add(o.(*unstructured.Unstructured).GetName())
	}
}

func (pc *presetController) reconcile(ctx context.Context, name string) error {
	pc.mu.Lock()
	pc.reconciles++
	pc.mu.Unlock()
	presets := pc.c.Resource(greenhouse.Resources[greenhouse.KindPluginPreset]).Namespace(pc.ns)
	plugins := pc.c.Resource(greenhouse.Resources[greenhouse.KindPlugin]).Namespace(pc.ns)
	preset, err := presets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	selMap, _, _ := unstructured.NestedMap(preset.Object, "spec", "clusterSelector")
	var ls metav1.LabelSelector
	if err := runtimeFromMap(selMap, &ls); err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return err
	}
	clusters, err := pc.c.Resource(greenhouse.Resources[greenhouse.KindCluster]).Namespace(pc.ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	for _, cluster := range clusters.Items {
		if cluster.GetDeletionTimestamp() != nil {
			continue
		}
		pluginName := fmt.Sprintf("%s-%s", preset.GetName(), cluster.GetName())
		cur, err := plugins.Get(ctx, pluginName, metav1.GetOptions{})
		switch {
		case err == nil:
			if cur.GetLabels()[greenhouse.LabelPluginPreset] != preset.GetName() {
				continue // not the preset's: never touched
			}
		case apierrors.IsNotFound(err):
			cur = &unstructured.Unstructured{}
			cur.SetAPIVersion(greenhouse.Group.String())
			cur.SetKind(greenhouse.KindPlugin)
			cur.SetName(pluginName)
			cur.SetNamespace(pc.ns)
		default:
			return err
		}
		before := cur.DeepCopy()
		if err := pc.mutate(cur, preset, cluster.GetName()); err != nil {
			return err
		}
		switch {
		case cur.GetResourceVersion() == "":
			_, err = plugins.Create(ctx, cur, metav1.CreateOptions{})
		case equality.Semantic.DeepEqual(before, cur):
			continue
		default:
			_, err = plugins.Update(ctx, cur, metav1.UpdateOptions{})
		}
		pc.mu.Lock()
		pc.writes[pluginName]++
		pc.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// mutate is the function Greenhouse passes CreateOrUpdate.
func (pc *presetController) mutate(p, preset *unstructured.Unstructured, cluster string) error {
	l := p.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[greenhouse.LabelPluginPreset] = preset.GetName()
	p.SetLabels(l)
	t := true
	p.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: greenhouse.Group.String(), Kind: greenhouse.KindPluginPreset,
		Name: preset.GetName(), UID: preset.GetUID(), Controller: &t, BlockOwnerDeletion: &t}})

	values, _, _ := unstructured.NestedSlice(preset.Object, "spec", "plugin", "optionValues")
	overrides, _, _ := unstructured.NestedSlice(preset.Object, "spec", "clusterOptionOverrides")
	for _, o := range overrides {
		o := o.(map[string]any)
		if o["clusterName"] != cluster {
			continue
		}
		for _, ov := range o["overrides"].([]any) {
			name := ov.(map[string]any)["name"]
			if i := slices.IndexFunc(values, func(v any) bool { return v.(map[string]any)["name"] == name }); i >= 0 {
				values[i] = ov
			} else {
				values = append(values, ov)
			}
		}
		break // the first entry for the cluster, as slices.IndexFunc finds it
	}
	converted := make([]any, 0, len(values))
	for _, v := range values {
		v := v.(map[string]any)
		if _, ok := v["expression"]; ok {
			return fmt.Errorf("option %s has expression but expressionEvaluationEnabled is disabled for PluginPreset controller", v["name"])
		}
		out := map[string]any{"name": v["name"]}
		if val, ok := v["value"]; ok {
			out["value"] = val
		}
		if from, ok := v["valueFrom"].(map[string]any); ok {
			if secret, ok := from["secret"]; ok {
				out["valueFrom"] = map[string]any{"secret": secret}
			} else {
				out["valueFrom"] = map[string]any{}
			}
		}
		converted = append(converted, out)
	}
	spec := map[string]any{"clusterName": cluster, "optionValues": converted}
	for _, f := range []string{"pluginDefinitionRef", "displayName", "releaseNamespace", "deletionPolicy", "ignoreDifferences"} {
		if v, ok, _ := unstructured.NestedFieldCopy(preset.Object, "spec", "plugin", f); ok {
			spec[f] = v
		}
	}
	if v, ok, _ := unstructured.NestedFieldCopy(preset.Object, "spec", "waitFor"); ok {
		spec["waitFor"] = v
	}
	// getReleaseName: the Plugin's own, else the preset's.
	release, _, _ := unstructured.NestedString(p.Object, "spec", "releaseName")
	if release == "" {
		release, _, _ = unstructured.NestedString(preset.Object, "spec", "plugin", "releaseName")
	}
	if release != "" {
		spec["releaseName"] = release
	}
	return unstructured.SetNestedMap(p.Object, spec, "spec")
}

// counts returns the writes issued per Plugin and the reconciles done.
func (pc *presetController) counts() (map[string]int, int, []error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return maps.Clone(pc.writes), pc.reconciles, slices.Clone(pc.errs)
}

func runtimeFromMap(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
