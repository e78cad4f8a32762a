package schemetest_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/scheme/schemetest"
)

// Internal and v1 of a toy kind: Mode defaults to "auto" when empty, the
// case that used to need a fuzzer function.
type internalThing struct {
	runtime.TypeMeta
	Mode  string
	Count int32
}

type v1Thing struct {
	runtime.TypeMeta `json:",inline"`
	Mode             string `json:"mode,omitempty"`
	Count            int32  `json:"count,omitempty"`
}

func (in *internalThing) DeepCopyObject() runtime.Object { out := *in; return &out }
func (in *v1Thing) DeepCopyObject() runtime.Object       { out := *in; return &out }

var (
	internalGV = schema.GroupVersion{Group: "toy.strata.dev", Version: runtime.APIVersionInternal}
	v1GV       = schema.GroupVersion{Group: "toy.strata.dev", Version: "v1"}
)

// install registers the kind; lossy makes v1's conversion drop Count.
func install(lossy bool) func(*runtime.Scheme) {
	return func(s *runtime.Scheme) {
		s.AddKnownTypeWithName(internalGV.WithKind("Thing"), &internalThing{})
		s.AddKnownTypeWithName(v1GV.WithKind("Thing"), &v1Thing{})
		s.AddTypeDefaultingFunc(&v1Thing{}, func(o any) {
			if t := o.(*v1Thing); t.Mode == "" {
				t.Mode = "auto"
			}
		})
		must(s.AddConversionFunc((*v1Thing)(nil), (*internalThing)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*v1Thing), b.(*internalThing)
			out.Mode, out.Count = in.Mode, in.Count
			if lossy {
				out.Count = 0
			}
			return nil
		}))
		must(s.AddConversionFunc((*internalThing)(nil), (*v1Thing)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*internalThing), b.(*v1Thing)
			out.Mode, out.Count = in.Mode, in.Count
			return nil
		}))
		must(s.SetVersionPriority(v1GV))
	}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatal(a ...any)                 { r.errs = append(r.errs, fmt.Sprint(a...)); panic(r) }
func (r *recorder) Fatalf(format string, a ...any) { r.Errorf(format, a...); panic(r) }

func TestDefaultedFieldsNeedNoFuzzer(t *testing.T) {
	schemetest.RoundTrip(t, install(false))
}

func TestLossyConversionNamesTheField(t *testing.T) {
	var r recorder
	schemetest.RoundTrip(&r, install(true))
	if len(r.errs) != 1 {
		t.Fatalf("errors %q, want one", r.errs)
	}
	msg := r.errs[0]
	if !strings.Contains(msg, "Thing through toy.strata.dev/v1") || !strings.Contains(msg, "Count:") || strings.Contains(msg, "Mode:") {
		t.Errorf("the message does not name Count alone:\n%s", msg)
	}
	if n := strings.Count(msg, "\n"); n > 25 {
		t.Errorf("a %d-line message for one field:\n%s", n, msg)
	}
}
