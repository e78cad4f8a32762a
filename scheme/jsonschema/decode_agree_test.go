package jsonschema_test

import (
	"fmt"
	"net/netip"
	goruntime "runtime"
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

// TestSchemaOfFloat32Max: 3.4028235e38 is how Go writes math.MaxFloat32 as
// a float32 (what --print-config prints); the decoder takes it, so must
// the schema.
func TestSchemaOfFloat32Max(t *testing.T) {
	agree[struct {
		X float32 `json:"x"`
	}](t, "{x: 3.4028235e38}", "{x: -3.4028235e38}")
}

type keyedTree struct {
	Name     string      `json:"name"`
	Children []keyedTree `json:"children,omitempty" strata:"list-map-key=name"`
}

// TestSchemaOfRecursiveKeyedList: a recursive type whose keyed list holds
// itself: For must return a schema (or an error), not panic.
func TestSchemaOfRecursiveKeyedList(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("For panicked: %v", r)
		}
	}()
	agree[keyedTree](t, "{name: a, children: [{name: b, children: [{name: c}]}]}", "{name: a, children: [{name: b, bogus: 1}]}")
}

type wideNode struct {
	Name  string                    `json:"name"`
	Child *wideNode                 `json:"child,omitempty"`
	Extra map[string]map[string]int `json:"extra,omitempty"`
}

// TestValidateGrowsWithTheDocument: what Validate does against a
// recursive schema (merging the shapes of a map's members) grows with the
// document, not with its square: four times the members allocate about
// four times the bytes, where copying the growing merge at each member
// allocated sixteen times.
func TestValidateGrowsWithTheDocument(t *testing.T) {
	s, err := jsonschema.For(probeKind[wideNode](t), probeGV, nil)
	if err != nil {
		t.Fatal(err)
	}
	allocated := func(members int) uint64 {
		var b strings.Builder
		b.WriteString(`{"apiVersion":"probe.test.strata.dev/v1","kind":"Probe","spec":{"name":"a","extra":{"m":{}`)
		for i := range members {
			fmt.Fprintf(&b, `,"m%d":{"k%d":1}`, i, i)
		}
		b.WriteString("}}}")
		data := []byte(b.String())
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		if errs := jsonschema.Validate(s, data); len(errs) != 0 {
			t.Fatal(errs)
		}
		goruntime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(2000), allocated(8000)
	if large > 8*small {
		t.Errorf("validating 2,000 members allocated %d bytes, 8,000 members %d: more than 8 times", small, large)
	}
}

// TestSchemaOfFloat32OfALargeInteger: a float32 field takes an integer
// past 2^53 (the decoder reads 9007199254740993 as a float32), which
// Validate keeps as an int64: no bound of the field's may turn into -2^63
// compared with it.
func TestSchemaOfFloat32OfALargeInteger(t *testing.T) {
	agree[struct {
		X float32 `json:"x"`
	}](t, "{x: 9007199254740993}", "{x: 1000000000000000000}")
}

// TestSchemaOfAScalarBesideAnEmptyList: a list of lists of a
// recursive type (a reference in the schema) given [[5], []]: the decoder
// refuses 5, which is no treeNode; merging the elements' shapes, 5's
// (a scalar) merged with the empty list's (none) must stay a scalar, or
// the reference expands to an empty schema that takes anything.
func TestSchemaOfAScalarBesideAnEmptyList(t *testing.T) {
	agree[gridNode](t, "{name: a, grid: [[5], []]}", "{name: a, grid: [[], [5]]}")
}

type gridNode struct {
	Name string       `json:"name"`
	Grid [][]gridNode `json:"grid,omitempty"`
}
