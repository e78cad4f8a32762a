package bench

import (
	"fmt"
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/component-base/codec"

	"github.com/stratacfg/strata/examples/component/apis/config"
	componentscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/examples/component/apis/config/v1beta1"
	"github.com/stratacfg/strata/scheme"
)

// universalDecoder is apimachinery used directly: a strict codec factory
// over a scheme holding every version, whose UniversalDecoder defaults in
// the file's version and converts to the internal type.
func universalDecoder() runtime.Decoder {
	s := runtime.NewScheme()
	componentscheme.Install(s)
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDecoder()
}

// kubeletDecode is kubelet's DecodeKubeletConfiguration pattern: decode
// strictly; when that fails with a strict decoding error, build a lenient
// scheme and codec factory and decode again, keeping the strict error as a
// warning.
func kubeletDecode(strict runtime.Decoder, data []byte) (runtime.Object, error, error) {
	obj, _, err := strict.Decode(data, nil, nil)
	if err == nil {
		return obj, nil, nil
	}
	if !runtime.IsStrictDecodingError(err) {
		return nil, nil, err
	}
	_, lenient, lerr := codec.NewLenientSchemeAndCodecs(config.AddToScheme, v1beta1.AddToScheme)
	if lerr != nil {
		return nil, nil, lerr
	}
	obj, _, lerr = lenient.UniversalDecoder().Decode(data, nil, nil)
	if lerr != nil {
		return nil, nil, fmt.Errorf("failed lenient decoding: %v", err)
	}
	return obj, err, nil
}

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func componentCodec(tb testing.TB) *scheme.Kind {
	tb.Helper()
	c, err := componentscheme.NewKind()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkCase3Decode decodes the component file strictly, defaulted in
// v1beta1 and converted to the internal type: strata's Codec.Decode
// against apimachinery's UniversalDecoder used directly. Then a file with
// one unknown field, which must decode with a warning: strata in Warn mode
// (one pass) against kubelet's strict-then-lenient double decode.
func BenchmarkCase3Decode(b *testing.B) {
	clean, unknown := readTestdata(b, "component.yaml"), readTestdata(b, "component-unknown-field.yaml")
	c := componentCodec(b)
	b.Run("strata", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Decode(clean, scheme.DecodeOptions{Source: "component.yaml", Mode: scheme.Strict}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		d := universalDecoder()
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := d.Decode(clean, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strata-warn-unknown-field", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := c.Decode(unknown, scheme.DecodeOptions{Source: "component.yaml", Mode: scheme.Warn})
			if err != nil || len(d.Warnings) != 1 {
				b.Fatal(err)
			}
		}
	})
	b.Run("kubelet-double-decode-unknown-field", func(b *testing.B) {
		d := universalDecoder()
		b.ReportAllocs()
		for b.Loop() {
			if _, warning, err := kubeletDecode(d, unknown); err != nil || warning == nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodersAgree checks that the decoders compared produce the same
// internal object, and the same warning for the unknown field.
func TestDecodersAgree(t *testing.T) {
	clean, unknown := readTestdata(t, "component.yaml"), readTestdata(t, "component-unknown-field.yaml")
	c := componentCodec(t)
	d := universalDecoder()
	doc, err := c.Decode(clean, scheme.DecodeOptions{Source: "component.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	direct, _, err := d.Decode(clean, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.Object, direct) {
		t.Errorf("strata and apimachinery disagree:\nstrata       %+v\napimachinery %+v", doc.Object, direct)
	}
	if cfg := doc.Object.(*config.ComponentConfiguration); cfg.Port != 9443 || !cfg.FeatureGates["AlphaThing"] || cfg.ClientConnection.QPS != 20 {
		t.Errorf("decoded %+v", cfg)
	}

	if _, err := c.Decode(unknown, scheme.DecodeOptions{Source: "component.yaml"}); err == nil {
		t.Error("strata's strict mode accepted an unknown field")
	}
	warned, err := c.Decode(unknown, scheme.DecodeOptions{Source: "component.yaml", Mode: scheme.Warn})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, warning, err := kubeletDecode(d, unknown)
	if err != nil || warning == nil {
		t.Fatalf("kubelet pattern: %v, warning %v", err, warning)
	}
	if !reflect.DeepEqual(warned.Object, kubelet) || !reflect.DeepEqual(warned.Object, direct) {
		t.Errorf("warn mode and the double decode disagree:\nstrata  %+v\nkubelet %+v", warned.Object, kubelet)
	}
	if len(warned.Warnings) != 1 {
		t.Errorf("warnings %v, want the unknown field", warned.Warnings)
	}
}
