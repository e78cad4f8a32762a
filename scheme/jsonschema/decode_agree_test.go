package jsonschema_test

import (
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/scheme/jsonschema"
)

// probe is a one-version kind whose spec is of type T, to compare what
// its schema accepts with what a strict decode accepts.
type probe[T any] struct {
	metav1.TypeMeta `json:",inline"`
	Spec            T `json:"spec"`
}

func (in *probe[T]) DeepCopyObject() runtime.Object { out := *in; return &out }

var probeGV = schema.GroupVersion{Group: "probe.test.strata.dev", Version: "v1"}

const probeHead = "apiVersion: probe.test.strata.dev/v1\nkind: Probe\n"

func probeKind[T any](t *testing.T) *scheme.Kind {
	t.Helper()
	k, err := scheme.New(scheme.Config{
		Group: probeGV.Group, Kind: "Probe", Hub: "v1",
		Versions: []scheme.Version{{Version: "v1", AddToScheme: func(s *runtime.Scheme) error {
			s.AddKnownTypeWithName(probeGV.WithKind("Probe"), &probe[T]{})
			return nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// agree checks that the schema of the kind of spec T and a strict decode
// both accept, or both refuse, each spec.
func agree[T any](t *testing.T, specs ...string) {
	t.Helper()
	k := probeKind[T](t)
	s, err := jsonschema.For(k, probeGV, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range specs {
		doc := []byte(probeHead + "spec: " + spec + "\n")
		errs := jsonschema.Validate(s, doc)
		_, derr := k.Decode(doc, scheme.DecodeOptions{Source: "probe.yaml"})
		if (len(errs) == 0) != (derr == nil) {
			t.Errorf("spec: %s: schema errors %q; decode error %v", spec, errs, derr)
		}
	}
}

// TestSchemaOfIntOrString: an intstr.IntOrString takes an integer or a
// string.
func TestSchemaOfIntOrString(t *testing.T) {
	agree[struct {
		X intstr.IntOrString `json:"x"`
	}](t, "{x: 5}", "{x: 50%}")
}

// TestSchemaOfQuantity: "a quantity a string or a number" (special).
func TestSchemaOfQuantity(t *testing.T) {
	agree[struct {
		X resource.Quantity `json:"x"`
	}](t, "{x: 5}", "{x: 0.5}", "{x: 5Gi}")
}

// TestSchemaOfTextUnmarshaler: a type that decodes itself from a string
// through encoding.TextUnmarshaler (netip.Addr) is a string, not an
// object of its Go fields.
func TestSchemaOfTextUnmarshaler(t *testing.T) {
	agree[struct {
		X netip.Addr `json:"x"`
	}](t, "{x: 10.0.0.1}", "{x: {}}")
}

// TestSchemaOfByteArray: a [N]byte is a JSON array of numbers (only a
// byte slice is a base64 string).
func TestSchemaOfByteArray(t *testing.T) {
	agree[struct {
		X [2]byte `json:"x"`
	}](t, "{x: AQI=}")
}

// TestSchemaOfStringOption: a number tagged `json:",string"` is written
// and read as a string.
func TestSchemaOfStringOption(t *testing.T) {
	agree[struct {
		X int32 `json:"x,string"`
	}](t, `{x: "5"}`, "{x: 5}")
}

// TestSchemaOfIntegerKeyedMap: a map whose keys are integers takes only
// integer member names.
func TestSchemaOfIntegerKeyedMap(t *testing.T) {
	agree[struct {
		X map[int]string `json:"x"`
	}](t, `{x: {"1": a}}`, "{x: {a: a}}")
}

// TestValidateOfLargeIntegers: "The decoder refuses what the Go type
// cannot hold: so does the schema" — and accepts what it can hold: an
// int64 above 2^53.
func TestValidateOfLargeIntegers(t *testing.T) {
	agree[struct {
		X int64 `json:"x"`
		Y int32 `json:"y"`
	}](t, "{x: 9007199254740995}", "{x: 9223372036854775807}")
}

// TestSchemaBoundsFloat32: a float32 holds no 1e39.
func TestSchemaBoundsFloat32(t *testing.T) {
	agree[struct {
		X float32 `json:"x"`
	}](t, "{x: 1e39}")
}

type treeNode struct {
	Name  string    `json:"name"`
	Child *treeNode `json:"child,omitempty"`
}

// TestSchemaOfRecursiveType: a kind whose type refers to itself (which
// scheme.New accepts) has a schema, as strict at every depth as the
// decoder: the type met again is a reference to its definition.
func TestSchemaOfRecursiveType(t *testing.T) {
	agree[treeNode](t, "{name: a}", "{name: a, child: {name: b, child: {name: c}}}", "{child: {child: {bogus: 1}}}", "{child: {child: {name: 1}}}")
	// Two references to itself, 60 levels deep: what the validator
	// checks grows with the document, not twice at each level.
	deep := "{v: 1}"
	for range 60 {
		deep = "{v: 1, l: " + deep + ", r: {v: 2}}"
	}
	agree[binaryNode](t, deep, strings.Replace(deep, "{v: 1}", "{v: x}", 1))
}

type binaryNode struct {
	V int         `json:"v"`
	L *binaryNode `json:"l,omitempty"`
	R *binaryNode `json:"r,omitempty"`
}
