package merge_test

import (
	"fmt"

	"github.com/stratacfg/strata/merge"
)

func ExampleMerge() {
	file, _ := merge.Flatten([]byte(`{"port": 8443, "enableProfiling": true, "featureGates": {"A": true, "B": true}}`))
	dropIn, _ := merge.Flatten([]byte(`{"enableProfiling": false, "featureGates": {"B": false}}`))

	r := merge.Merge(
		&merge.Layer{Source: merge.Source{Kind: "file", Name: "/etc/comp/config.yaml"}, Values: file},
		&merge.Layer{Source: merge.Source{Kind: "drop-in", Name: "/etc/comp/config.d/10-debug.yaml"}, Values: dropIn},
		&merge.Layer{Source: merge.Source{Kind: "flag", Name: "--port"}, Values: map[string]string{"/port": "9443"}},
	)
	doc, _ := r.Document()
	fmt.Println(string(doc))

	p, _ := r.Explain("/enableProfiling")
	fmt.Printf("%s = %s from %s, shadowing %s = %s\n", p.Key, p.Value, p.Source, p.Shadowed[0].Source, p.Shadowed[0].Value)
	// Output:
	// {"enableProfiling":false,"featureGates":{"A":true,"B":false},"port":9443}
	// /enableProfiling = false from drop-in /etc/comp/config.d/10-debug.yaml, shadowing file /etc/comp/config.yaml = true
}

func ExampleRules() {
	cluster := &merge.Layer{Source: merge.Source{Kind: "configmap", Name: "strata-system/defaults"},
		Values: map[string]string{"/timeout": "60", "/maxTimeout": "600"}}
	tenant := &merge.Layer{Source: merge.Source{Kind: "namespace", Name: "team-a/overrides"},
		Values: map[string]string{"/timeout": "120", "/maxTimeout": "6000"},
		Policy: &merge.Rules{Allow: []string{"/timeout"}, Deny: map[string]string{"/maxTimeout": "cluster-only"}}}

	r := merge.Merge(cluster, tenant)
	fmt.Println(r.Values())
	for _, d := range r.Dropped() {
		fmt.Println(d)
	}
	// Output:
	// map[/maxTimeout:600 /timeout:120]
	// namespace team-a/overrides: key "/maxTimeout" dropped: cluster-only
}
