package typed

import (
	"reflect"
	"testing"
	"time"
)

type copyPair struct {
	A int16
	B float64
}

type copyDoc struct {
	setInner
	Kind   string
	On     *bool
	Small  *int8
	Count  *int64
	Span   *span
	Pair   *copyPair
	Unset  *int32
	Arr    [3]uint8
	Labels map[string]string
	List   []string
	hidden *uint32
}

// TestFlatCopyIsADeepCopy checks that a flat copy equals the original
// and shares nothing that can change: writing through every pointer of
// the copy leaves the original as it was, and copies are independent.
func TestFlatCopyIsADeepCopy(t *testing.T) { // not parallel: it counts allocations
	on, small, count, hidden := true, int8(-3), int64(1)<<40, uint32(7)
	src := &copyDoc{
		setInner: setInner{Depth: 4},
		Kind:     "Doc",
		On:       &on, Small: &small, Count: &count,
		Span:   &span{d: time.Minute},
		Pair:   &copyPair{A: 2, B: 0.5},
		Arr:    [3]uint8{1, 2, 3},
		hidden: &hidden,
	}
	keep := *src
	c, ok := NewFlatCopy(src)
	if !ok {
		t.Fatal("NewFlatCopy refused a struct whose pointers point to scalars")
	}
	if got := len(c.slots); got != 6 {
		t.Errorf("%d pointers copied, want 6", got)
	}
	a, b := c.Copy().(*copyDoc), c.Copy().(*copyDoc)
	if !reflect.DeepEqual(a, src) {
		t.Fatalf("copy %+v, want %+v", a, src)
	}
	*a.On, *a.Small, *a.Count, a.Span.d, a.Pair.B, *a.hidden = false, 9, 2, time.Hour, 3, 8
	a.Depth, a.Kind = 5, "Other"
	if !reflect.DeepEqual(*src, keep) || *src.On != true || *src.Small != -3 || *src.Count != 1<<40 ||
		src.Span.d != time.Minute || src.Pair.B != 0.5 || *src.hidden != 7 {
		t.Errorf("writing through a copy changed the original: %+v", src)
	}
	if !reflect.DeepEqual(b, src) {
		t.Errorf("writing through one copy changed another: %+v", b)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = c.Copy() }); allocs > 2 {
		t.Errorf("Copy made %.0f allocations, want 2", allocs)
	}
}

// TestFlatCopyRefuses checks that NewFlatCopy refuses what a byte copy of
// its pointees would share, and what is not a pointer to a struct.
func TestFlatCopyRefuses(t *testing.T) {
	t.Parallel()
	name := "x"
	for what, obj := range map[string]any{
		"a map":                      &copyDoc{Labels: map[string]string{}},
		"a slice":                    &copyDoc{List: []string{}},
		"a pointer to a string":      &struct{ S *string }{&name},
		"a pointer to pointers":      &struct{ P *setDoc }{&setDoc{}},
		"an interface":               &struct{ I any }{1},
		"a struct, not a pointer":    copyDoc{},
		"a nil pointer":              (*copyDoc)(nil),
		"a pointer to a non-struct":  &name,
		"a pointer to a zero size":   &struct{ Z *struct{} }{&struct{}{}},
		"an array of set pointers":   &struct{ A [1]*int }{[1]*int{new(int)}},
		"a nested struct with a map": &struct{ In struct{ M map[int]int } }{struct{ M map[int]int }{map[int]int{}}},
	} {
		if _, ok := NewFlatCopy(obj); ok {
			t.Errorf("NewFlatCopy accepted %s", what)
		}
	}
	if _, ok := NewFlatCopy(&struct {
		P *int
		M map[int]int
		A [1]*int
	}{}); !ok {
		t.Error("NewFlatCopy refused nil pointers, maps and arrays of nil pointers")
	}
}
