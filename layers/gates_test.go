package layers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratacfg/strata/internal/testkind/component/validation"
)

// TestUnknownGatesRefusedAsRead names the feature gates a file sets that
// the component does not know, as the validator would (each credited to
// the layer whose value would have been merged, once, after the
// validator's own errors), though they are taken out of the file before
// it is decoded: a layer above that sets or removes a gate decides it.
func TestUnknownGatesRefusedAsRead(t *testing.T) {
	const alpha = "apiVersion: component.example.strata.dev/v1alpha1\nkind: ComponentConfiguration\n"
	many := "featureGates:\n"
	for i := range 100 {
		many += fmt.Sprintf("  G%03d: true\n", i)
	}
	for _, tc := range []struct {
		name    string
		base    string
		dropIn  string // none when empty
		flags   []string
		want    []string // lines of the error, in order; none: it loads
		without []string
	}{{
		name: "unknown among known",
		base: head + "featureGates:\n  AlphaThing: true\n  Foo: true\n  Bar: false\n",
		want: []string{
			"file BASE: featureGates[Bar]: Invalid value: false: unrecognized feature gate: Bar",
			"file BASE: featureGates[Foo]: Invalid value: true: unrecognized feature gate: Foo",
		},
		without: []string{"AlphaThing"},
	}, {
		name: "after the validator's errors",
		base: head + "featureGates:\n  Foo: true\n  GAThing: false\n",
		want: []string{
			"file BASE: featureGates[GAThing]: Invalid value: false: cannot set feature gate GAThing to false, feature is locked to true",
			"file BASE: featureGates[Foo]: Invalid value: true: unrecognized feature gate: Foo",
		},
	}, {
		name: "in an older version",
		base: alpha + "featureGates:\n  Foo: true\n",
		want: []string{"file BASE: featureGates[Foo]: Invalid value: true: unrecognized feature gate: Foo"},
	}, {
		name: "in JSON",
		base: `{"apiVersion": "component.example.strata.dev/v1beta1", "kind": "ComponentConfiguration", "featureGates": {"Foo": true, "BetaThing": false}}`,
		want: []string{"file BASE: featureGates[Foo]: Invalid value: true: unrecognized feature gate: Foo"},
	}, {
		name:   "removed by a drop-in",
		base:   head + "featureGates:\n  Foo: true\n",
		dropIn: "featureGates:\n  Foo: null\n",
	}, {
		name:   "all removed by a drop-in",
		base:   head + "featureGates:\n  Foo: true\n",
		dropIn: "featureGates: null\n",
	}, {
		name:   "an empty map in a drop-in removes nothing",
		base:   head + "featureGates:\n  Foo: true\n",
		dropIn: "featureGates: {}\n",
		want:   []string{"file BASE: featureGates[Foo]: Invalid value: true: unrecognized feature gate: Foo"},
	}, {
		name: "removed in the file that names it",
		base: head + "featureGates:\n  Foo: null\n",
	}, {
		name:    "set again by a drop-in",
		base:    head + "featureGates:\n  Foo: true\n  Bar: true\n",
		dropIn:  "featureGates:\n  Foo: false\n",
		want:    []string{"file BASE: featureGates[Bar]: Invalid value: true: unrecognized feature gate: Bar", "drop-in DROPIN: featureGates[Foo]: Invalid value: false: unrecognized feature gate: Foo"},
		without: []string{"file BASE: featureGates[Foo]"},
	}, {
		name:    "set again by a flag",
		base:    head + "featureGates:\n  Foo: true\n",
		flags:   []string{"--feature-gates", "Foo=false"},
		want:    []string{"flag --feature-gates: featureGates[Foo]: Invalid value: false: unrecognized feature gate: Foo"},
		without: []string{"file BASE"},
	}, {
		name: "many",
		base: head + many,
		want: []string{
			"file BASE: featureGates[G000]: Invalid value: true: unrecognized feature gate: G000",
			"file BASE: featureGates[G018]: Invalid value: true: unrecognized feature gate: G018",
			"file BASE: featureGates: Invalid value: \"81 more gates\": 81 more unrecognized feature gates",
		},
		without: []string{"G019"},
	}, {
		name:   "a known gate named twice, in JSON",
		base:   `{"apiVersion": "component.example.strata.dev/v1beta1", "kind": "ComponentConfiguration", "featureGates": {"BetaThing": true, "BetaThing": false, "Foo": true}}`,
		dropIn: "featureGates:\n  Foo: null\n",
		want:   []string{`duplicate field`, `BetaThing`},
	}, {
		name: "a name written with an escape",
		base: `{"apiVersion": "component.example.strata.dev/v1beta1", "kind": "ComponentConfiguration", "featureGate\u0073": {"F\u006fo": true}}`,
		want: []string{"file BASE: featureGates[Foo]: Invalid value: true: unrecognized feature gate: Foo"},
	}, {
		// Beside the items of a List: no member of a List, refused as
		// apimachinery's strict decoder refuses it.
		name: "beside the items of a List",
		base: `{"apiVersion": "v1", "kind": "List", "featureGates": {"Foo": true}, "items": [{"apiVersion": "component.example.strata.dev/v1beta1", "kind": "ComponentConfiguration", "port": 7000}]}`,
		want: []string{`the List: unknown field "featureGates"`},
	}, {
		name: "inside the item of a List",
		base: `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "component.example.strata.dev/v1beta1", "kind": "ComponentConfiguration", "featureGates": {"Foo": true}}]}`,
		want: []string{"file BASE: featureGates[Foo]: Invalid value: true: unrecognized feature gate: Foo"},
	}, {
		name: "not an object",
		base: head + "featureGates: [Foo]\n",
		want: []string{"featureGates"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			base := filepath.Join(dir, "base.yaml")
			if err := os.WriteFile(base, []byte(tc.base), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--config", base}
			dropIn := filepath.Join(dir, "d", "10.yaml")
			if tc.dropIn != "" {
				if err := os.Mkdir(filepath.Dir(dropIn), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dropIn, []byte(tc.dropIn), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config-dir", filepath.Dir(dropIn))
			}
			c := component(t)
			c.FeatureGates = validation.NewFeatureGate
			loaded, _, err := c.Load(context.Background(), append(args, tc.flags...))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if _, ok := loaded.Object.FeatureGates["Foo"]; ok {
					t.Errorf("Foo is still set: %v", loaded.Object.FeatureGates)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded, want %q", tc.want)
			}
			msg := strings.NewReplacer(base, "BASE", dropIn, "DROPIN").Replace(err.Error())
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error lacks %q after byte %d:\n%s", w, at, msg)
				}
				at += i + len(w)
			}
			for _, w := range tc.without {
				if strings.Contains(msg, w) {
					t.Errorf("error names %q:\n%s", w, msg)
				}
			}
		})
	}
}

// TestFeatureGatesNeedTheirMap refuses to check the gates of a kind that
// keeps none at the top level.
func TestFeatureGatesNeedTheirMap(t *testing.T) {
	a := agent()
	a.FeatureGates = validation.NewFeatureGate
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: agent.example.dev/v1\nkind: AgentConfig\nport: 7000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := a.Load(context.Background(), []string{"--config", file})
	if err == nil || !strings.Contains(err.Error(), "agent.example.dev/v1 keeps no featureGates map of booleans at the top level") {
		t.Errorf("Load: %v", err)
	}
}
