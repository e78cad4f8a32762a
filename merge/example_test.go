package merge_test

import (
	"context"
	"fmt"

	"github.com/stratacfg/strata/merge"
)

func ExampleMerge() {
	file, _ := merge.Flatten([]byte(`{"port": 8443, "enableProfiling": true, "featureGates": {"A": true, "B": true}}`))
	dropIn, _ := merge.Flatten([]byte(`{"enableProfiling": false, "featureGates": {"B": false}}`))

	r := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: "file", Name: "/etc/comp/config.yaml"}, Values: file},
		&merge.Layer{Source: merge.Source{Origin: "drop-in", Name: "/etc/comp/config.d/10-debug.yaml"}, Values: dropIn},
		&merge.Layer{Source: merge.Source{Origin: "flag", Name: "--port"}, Values: map[string]string{"/port": "9443"}},
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
	cluster := &merge.Layer{Source: merge.Source{Origin: "configmap", Name: "strata-system/defaults"},
		Values: map[string]string{"/timeout": "60", "/maxTimeout": "600"}}
	tenant := &merge.Layer{Source: merge.Source{Origin: "namespace", Name: "team-a/overrides"},
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

func ExampleLists() {
	lists := merge.Lists{"/optionValues": "name"}
	preset, _ := lists.Flatten([]byte(`{"optionValues": [
		{"name": "replicas", "value": 2},
		{"name": "token", "value": "changeme"}]}`))
	override, _ := lists.Flatten([]byte(`{"optionValues": [
		{"name": "token", "valueFrom": {"secret": {"name": "api", "key": "token"}}},
		{"name": "replicas", "$patch": "delete"}]}`))

	r := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: "PluginPreset", Name: "org/monitoring"}, Values: preset, Lists: lists},
		&merge.Layer{Source: merge.Source{Origin: "PluginOverride", Name: "org/prod"}, Values: override, Lists: lists},
	)
	doc, _ := r.Document() // the keyed lists of its layers, as lists
	fmt.Println(string(doc))
	p, _ := r.Explain("/optionValues/token")
	fmt.Printf("token from %s, shadowing %s\n", p.Source, p.Shadowed[0].Source)
	// Output:
	// {"optionValues":[{"name":"token","valueFrom":{"secret":{"key":"token","name":"api"}}}]}
	// token from PluginOverride org/prod, shadowing PluginPreset org/monitoring
}

func ExampleResult_ResolveRefs() {
	ref := merge.Ref{Kind: "secret", Namespace: "team-a", Name: "db", Key: "password"}
	r := merge.Merge(
		&merge.Layer{Source: merge.Source{Origin: "file"}, Values: map[string]string{"/db/password": `"changeme"`}},
		// The producer of this layer (a typed valueFrom) wrote a reference.
		&merge.Layer{Source: merge.Source{Origin: "PluginOverride", Name: "team-a/db"}, Values: map[string]string{"/db/password": ref.JSON()}, Refs: map[string]bool{"/db/password": true}},
	)
	v, _ := r.Lookup("/db/password")
	got, _ := r.RefOf("/db/password", v)
	fmt.Println("effective:", got) // shown by name, never by content

	// Only when asked, through the caller's reader, in the namespaces it
	// may read.
	read := func(_ context.Context, r merge.Ref) ([]byte, error) { return []byte("s3cret"), nil }
	resolved, _ := r.ResolveRefs(context.Background(), []string{"team-a"}, read)
	fmt.Println("resolved:", resolved["/db/password"])
	// Output:
	// effective: secret team-a/db#password
	// resolved: "s3cret"
}
