package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

// TestReportedForgetsDeletedPlugins: the controller remembers what it
// reported of an object, to report each problem once, only while there
// is a problem and the object exists: Plugins created and deleted under
// new names do not grow its memory.
func TestReportedForgetsDeletedPlugins(t *testing.T) {
	c := &controller{listers: greenhouse.CacheReader{}, log: klog.Background(), reported: map[string]string{}}
	const n = 1000
	for i := range n {
		u := &unstructured.Unstructured{}
		u.SetKind(greenhouse.KindPlugin)
		u.SetNamespace("org")
		u.SetName(fmt.Sprintf("p-%d", i))
		// What reconcile records of a Plugin with no problem.
		c.report(u, "InvalidOptionValues", nil)
		c.report(u, "ContestedOption", nil)
	}
	// Every one of them deleted, and reconciled once more.
	for i := range n {
		if err := c.reconcile(context.Background(), fmt.Sprintf("org/p-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.reported) != 0 {
		t.Errorf("%d Plugins reconciled without a problem and deleted since leave %d entries in the controller's memory", n, len(c.reported))
	}
}

// TestReportedForgetsDeletedOverrides: what the controller reported of a
// PluginOverride in a Plugin's contest is forgotten once the contest ends
// or the Plugin is deleted: contested PluginOverrides created and deleted
// under new names do not grow its memory.
func TestReportedForgetsDeletedOverrides(t *testing.T) {
	gvr := greenhouse.Resources[greenhouse.KindPluginOverride]
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	c := &controller{
		listers:  greenhouse.CacheReader{gvr: cache.NewGenericLister(idx, gvr.GroupResource())},
		events:   &record.FakeRecorder{},
		log:      klog.Background(),
		reported: map[string]string{},
	}
	const n = 100
	for i := range n {
		var overrides []*unstructured.Unstructured
		for _, s := range []string{"a", "b"} {
			o := &unstructured.Unstructured{}
			o.SetKind(greenhouse.KindPluginOverride)
			o.SetNamespace("org")
			o.SetName(fmt.Sprintf("o-%d-%s", i, s))
			if err := idx.Add(o); err != nil {
				t.Fatal(err)
			}
			overrides = append(overrides, o)
		}
		p := &unstructured.Unstructured{}
		p.SetKind(greenhouse.KindPlugin)
		p.SetNamespace("org")
		p.SetName(fmt.Sprintf("p-%d", i))
		two := json.RawMessage(`2`)
		res := &greenhouse.Result{Provenance: map[string]greenhouse.ValueSource{"size": {
			Source:    "PluginOverride org/" + overrides[1].GetName(),
			Contested: []greenhouse.Contender{{Source: "PluginOverride org/" + overrides[0].GetName(), Value: &two}},
		}}}
		c.reportContests(context.Background(), p, res)
	}
	if len(c.reported) == 0 {
		t.Fatal("no contest recorded: the test does not reach reportContests' records")
	}
	// Every override and Plugin deleted; each Plugin reconciled once more.
	for _, o := range idx.List() {
		if err := idx.Delete(o); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if err := c.reconcile(context.Background(), fmt.Sprintf("org/p-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.reported) != 0 {
		some := ""
		for k := range c.reported {
			some = k
			break
		}
		t.Errorf("%d contested Plugins and their %d PluginOverrides, all deleted, leave %d entries in the controller's memory (%q, …)", n, 2*n, len(c.reported), some)
	}
}
