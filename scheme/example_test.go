package scheme_test

import (
	"fmt"

	"github.com/stratacfg/strata/examples/component/apis/config"
	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/examples/component/apis/config/v1beta1"
	"github.com/stratacfg/strata/scheme"
)

func ExampleKind_Decode() {
	codec, _ := configscheme.NewKind()
	in := []byte(`apiVersion: component.example.strata.dev/v1alpha1
kind: ComponentConfiguration
profiling: false
`)
	doc, err := codec.Decode(in, scheme.DecodeOptions{Source: "old.yaml", Mode: scheme.Strict})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := doc.Object.(*config.ComponentConfiguration)
	fmt.Println(doc.GVK.Version, cfg.Port, cfg.EnableProfiling)
	fmt.Println(doc.Warnings[0])

	out, _ := codec.Encode(cfg, v1beta1.SchemeGroupVersion, scheme.YAML)
	fmt.Println(len(out) > 0)

	_, err = codec.Decode([]byte("apiVersion: component.example.strata.dev/v1beta1\nkind: ComponentConfiguration\nprot: 1\n"), scheme.DecodeOptions{Source: "typo.yaml"})
	fmt.Println(err)
	// Output:
	// v1alpha1 8443 false
	// old.yaml: apiVersion component.example.strata.dev/v1alpha1 is deprecated in v0.3; use component.example.strata.dev/v1beta1
	// true
	// typo.yaml: unknown field "prot"
}
