package target_test

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/target"
)

func ExampleLadder_Select() {
	// Greenhouse's ADR 007: no selector < clusters < plugin definitions < both.
	ladder := target.Ladder{"none", "cluster", "definition", "both"}
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	layer := func(name, class string, created time.Time, sel target.Selector, values map[string]string) *target.Layer {
		return &target.Layer{Layer: &merge.Layer{Source: merge.Source{Origin: "PluginOverride", Name: name}, Values: values},
			Selector: sel, Class: class, Created: created, Name: name}
	}
	prod := labels.SelectorFromSet(labels.Set{"tier": "prod"})
	overrides := []*target.Layer{
		layer("org/monitoring-prod", "both", day(1), target.Selector{Labels: prod, Dimensions: map[string][]string{"pluginDefinition": {"kube-monitoring"}}},
			map[string]string{"/retention": `"90d"`}),
		layer("org/everywhere", "none", day(2), target.Selector{}, map[string]string{"/retention": `"7d"`, "/logLevel": `"warn"`}),
		layer("org/prod", "cluster", day(3), target.Selector{Labels: prod, ExcludeNames: []string{"eu-de-9"}}, map[string]string{"/logLevel": `"error"`}),
		layer("org/qa", "cluster", day(4), target.Selector{Labels: labels.SelectorFromSet(labels.Set{"tier": "qa"})}, map[string]string{"/logLevel": `"debug"`}),
	}
	cluster := target.Target{Name: "eu-de-1", Labels: map[string]string{"tier": "prod"}, Dimensions: map[string]string{"pluginDefinition": "kube-monitoring"}}

	applied, ignored, _ := ladder.Select(cluster, overrides)
	for _, l := range applied {
		fmt.Println("applies:", l.Name)
	}
	for _, ig := range ignored {
		fmt.Println("left out:", ig.Layer.Name, "-", ig.Reason)
	}
	r := merge.Merge(target.Layers(applied)...)
	doc, _ := r.Document()
	fmt.Println(string(doc))
	// Output:
	// applies: org/everywhere
	// applies: org/prod
	// applies: org/monitoring-prod
	// left out: org/qa - label tier=qa: it is prod
	// {"logLevel":"error","retention":"90d"}
}
