package main

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
