package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

// TestMessagesOfAWritersPluginBounded: what strata says of a Plugin
// writer's input stays short whatever the input (docs/SECURITY.md: 128
// bytes of a value, 20 problems and a count): the denial of a Plugin that
// gives one option 20,000 times, and the problem of a 1 MiB value of the
// wrong type kept unchecked.
func TestMessagesOfAWritersPluginBounded(t *testing.T) {
	const limit = 64 << 10
	t.Run("an option given 20,000 times", func(t *testing.T) {
		var b strings.Builder
		for i := range 20000 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"name":"size","value":%d}`, i)
		}
		raw := []byte(`{"apiVersion":"greenhouse.sap/v1alpha1","kind":"Plugin","metadata":{"name":"p-c1","namespace":"org"},` +
			`"spec":{"pluginDefinitionRef":{"name":"app"},"clusterName":"c1","optionValues":[` + b.String() + `]}}`)
		v := &validator{objs: objects(t, definition, cluster), log: klog.Background()}
		err := v.validate(greenhouse.KindPlugin, "org", raw)
		if err == nil {
			t.Fatal("a Plugin giving size 20,000 times is admitted")
		}
		if n := len(err.Error()); n > limit {
			t.Errorf("the denial of a %d-byte Plugin is %d bytes long, %d lines: %.200s…", len(raw), n, strings.Count(err.Error(), "\n")+1, err)
		}
	})
	t.Run("a 1 MiB value of the wrong type", func(t *testing.T) {
		objs := objects(t, definition, cluster, presetPlugin)
		p := &greenhouse.Plugin{}
		p.Namespace, p.Name = "org", "p-c1"
		p.Spec.PluginDefinitionRef.Name = "app"
		p.Spec.ClusterName = "c1"
		must, size := json.RawMessage(`"x"`), json.RawMessage(`"`+strings.Repeat("x", 1<<20)+`"`)
		p.Spec.OptionValues = []greenhouse.OptionValue{{Name: "must", Value: &must}, {Name: "size", Value: &size}}
		a, err := greenhouse.Admit(objs, p, greenhouse.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range a.Result.Unchecked {
			if len(u) > limit {
				t.Errorf("the problem of a 1 MiB value is %d bytes long: %.200s…", len(u), u)
			}
		}
	})
}

// TestUncheckedWarningReachesTheWriter: the admission warning that names
// a writer's value kept as written is one the API server passes on: it
// drops a warning that holds a control character (util/net
// NewWarningHeader), which a string's C1 characters (U+0080-U+009F) are
// and encoding/json does not escape.
func TestUncheckedWarningReachesTheWriter(t *testing.T) {
	objs := objects(t, definition, cluster, presetPlugin,
		override("o", "2026-01-01T00:00:00Z", "  - {name: size, value: 5}\n"))
	v, _ := json.Marshal("a\u0085b") // as the API server sends it: U+0085 as it is
	plugin := []byte(`{"apiVersion":"greenhouse.sap/v1alpha1","kind":"Plugin","metadata":{"name":"p-c1","namespace":"org","labels":{"greenhouse.sap/pluginpreset":"p"}},` +
		`"spec":{"pluginDefinitionRef":{"name":"app"},"clusterName":"c1","optionValues":[{"name":"must","value":"x"},{"name":"size","value":` + string(v) + `}]}}`)
	_, warnings := throughWebhook(t, objs, plugin)
	if len(warnings) == 0 {
		t.Fatal("no warning names the value kept unchecked")
	}
	for _, w := range warnings {
		if _, err := utilnet.NewWarningHeader(299, "-", w); err != nil {
			t.Errorf("the API server drops the warning %q: %v", w, err)
		}
	}
}
