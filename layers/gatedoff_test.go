package layers

import (
	"testing"

	"k8s.io/component-base/featuregate"

	"github.com/stratacfg/strata/merge"
)

// TestGatedOffAllAlphaAllBeta: a gated field's gate is judged as the
// component will run, component-base's AllAlpha and AllBeta included:
// featureGates {AllAlpha: true} turns an alpha field's gate on, and
// {AllBeta: false} a beta field's off.
func TestGatedOffAllAlphaAllBeta(t *testing.T) {
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"A": {Default: false, PreRelease: featuregate.Alpha},
		"B": {Default: true, PreRelease: featuregate.Beta},
	}); err != nil {
		t.Fatal(err)
	}
	gated := map[string]string{"/a": "A", "/b": "B"}
	file := merge.Source{Origin: OriginFile, Name: "a.yaml"}

	// What the component runs with, as its validator would set it.
	runs := func(gates map[string]bool) featuregate.FeatureGate {
		g := gate.DeepCopy()
		if err := g.SetFromMap(gates); err != nil {
			t.Fatal(err)
		}
		return g
	}
	if !runs(map[string]bool{"AllAlpha": true}).Enabled("A") || runs(map[string]bool{"AllBeta": false}).Enabled("B") {
		t.Fatal("component-base's AllAlpha / AllBeta do not do what the test expects")
	}

	res := merge.Merge(&merge.Layer{Source: file, Values: map[string]string{"/featureGates/AllAlpha": "true", "/a": "5"}})
	if errs, err := gatedOff(res, gated, gate); err != nil || len(errs) != 0 {
		t.Errorf("AllAlpha=true turns A on, yet setting a was refused: %v, %v", errs, err)
	}
	res = merge.Merge(&merge.Layer{Source: file, Values: map[string]string{"/featureGates/AllBeta": "false", "/b": "5"}})
	if errs, err := gatedOff(res, gated, gate); err != nil || len(errs) != 1 {
		t.Errorf("AllBeta=false turns B off, yet setting b gave %v, %v; want it refused", errs, err)
	}
	// A gate named overrides them.
	res = merge.Merge(&merge.Layer{Source: file, Values: map[string]string{"/featureGates/AllAlpha": "true", "/featureGates/A": "false", "/a": "5"}})
	if errs, err := gatedOff(res, gated, gate); err != nil || len(errs) != 1 {
		t.Errorf("A=false beside AllAlpha=true, yet setting a gave %v, %v; want it refused", errs, err)
	}
}
