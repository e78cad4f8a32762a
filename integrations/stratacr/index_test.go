package stratacr

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestConfigMapIndex drives the index as the informer's handler does and
// reads it as a resolve does.
func TestConfigMapIndex(t *testing.T) {
	cm := func(ns, name, version string, lbls map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: version, Labels: lbls}}
	}
	tenant := map[string]string{"config": "tenant"}
	sel := labels.SelectorFromSet(tenant)
	names := func(cms []*corev1.ConfigMap) []string {
		var out []string
		for _, c := range cms {
			out = append(out, c.Name+"@"+c.ResourceVersion)
		}
		slices.Sort(out)
		return out
	}
	x := &configMapIndex{byNS: map[string][]*corev1.ConfigMap{}, own: "ops", layers: []string{"overrides", "other", "one", "two"}}
	x.put(cm("a", "overrides", "1", tenant))
	if _, ok := x.list("a", sel); ok {
		t.Fatal("the index served before the handler had replayed the informer")
	}
	x.put(cm("a", "other", "2", nil))
	x.put(cm("b", "overrides", "3", tenant))
	x.put(&corev1.Namespace{}) // not a ConfigMap: ignored
	x.serve()

	for _, c := range []struct {
		step string
		do   func()
		ns   string
		want []string
	}{
		{"as replayed", func() {}, "a", []string{"overrides@1"}},
		{"an update replaces", func() { x.put(cm("a", "overrides", "4", tenant)) }, "a", []string{"overrides@4"}},
		{"a ConfigMap that gains the labels", func() { x.put(cm("a", "other", "5", tenant)) }, "a", []string{"other@5", "overrides@4"}},
		{"a ConfigMap that loses them, still delivered", func() { x.put(cm("a", "other", "5a", nil)) }, "a", []string{"overrides@4"}},
		{"and gains them again", func() { x.put(cm("a", "other", "5", tenant)) }, "a", []string{"other@5", "overrides@4"}},
		{"a deletion", func() { x.del(cm("a", "overrides", "6", tenant)) }, "a", []string{"other@5"}},
		{"a deletion the informer missed", func() {
			x.del(toolscache.DeletedFinalStateUnknown{Key: "a/other", Obj: cm("a", "other", "5", tenant)})
		}, "a", nil},
		{"another namespace untouched", func() {}, "b", []string{"overrides@3"}},
		// A tenant may label any number of ConfigMaps: those of no
		// layer's name are not held, but in the resolver's own namespace.
		{"a labelled ConfigMap of no layer's name", func() { x.put(cm("b", "bulk", "10", tenant)) }, "b", []string{"overrides@3"}},
		{"one in the resolver's namespace", func() { x.put(cm("ops", "bulk", "11", tenant)) }, "ops", []string{"bulk@11"}},
		{"a namespace with none", func() {}, "c", nil},
	} {
		c.do()
		got, ok := x.list(c.ns, sel)
		if !ok || !slices.Equal(names(got), c.want) {
			t.Errorf("%s: namespace %s lists %v (serving %v), want %v", c.step, c.ns, names(got), ok, c.want)
		}
	}
	if _, ok := x.byNS["a"]; ok {
		t.Error("a namespace whose last ConfigMap was deleted is still held")
	}

	// What a read returned is the resolver's: the cache's own objects,
	// in a slice no later event changes.
	first := cm("d", "one", "7", tenant)
	x.put(first)
	x.put(cm("d", "two", "8", tenant))
	held, _ := x.list("d", sel)
	x.del(first)
	x.put(cm("d", "two", "9", tenant))
	if got := names(held); !slices.Equal(got, []string{"one@7", "two@8"}) {
		t.Errorf("a list read earlier changed under its reader: %v", got)
	}
	if now, _ := x.list("d", sel); len(now) != 1 || now[0].ResourceVersion != "9" {
		t.Errorf("after the events, namespace d lists %v, want two@9", names(now))
	} else if held[0] != first && held[1] != first {
		t.Error("the index handed out a copy, not the object the informer delivered")
	}
	x.stop()
	if _, ok := x.list("b", sel); ok || len(x.byNS) > 0 {
		t.Error("a reset index still serves or holds ConfigMaps")
	}
}
