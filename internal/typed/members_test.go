package typed

import (
	"reflect"
	"testing"

	kjson "sigs.k8s.io/json"
)

// decodesStrictly decodes doc into out as apimachinery's strict JSON
// decoder does, and reports whether it decodes.
func decodesStrictly(doc string, out any) bool {
	strict, err := kjson.UnmarshalStrict([]byte(doc), out, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	return err == nil && len(strict) == 0
}

type depthOf struct {
	Depth int `json:"depth"`
}

// namedInline is a named field tagged ",inline": encoding/json and
// sigs.k8s.io/json give it the member "Inner", and inline nothing.
type namedInline struct {
	Inner depthOf `json:",inline"`
}

type embeddedX struct {
	X string `json:"x"`
}

// shadowed has a top-level x, which dominates the embedded one.
type shadowed struct {
	embeddedX
	X int `json:"x"`
}

type untaggedX struct{ X int }

type taggedX struct {
	Y string `json:"X"`
}

// tied embeds two fields named X as deep: the tagged one is the member.
type tied struct {
	untaggedX
	taggedX
}

type caseDoc struct {
	Limits struct {
		CPU int `json:"cpu"`
	} `json:"limits"`
}

// TestMembersAsTheDecoderReadsThem: the keys Set, At and Convert take are
// the members the strict decoder reads: a named field tagged ",inline"
// is a member of its own name, a shallower field dominates an embedded
// one of its name (and of two as shallow, the tagged one), and a
// structured value's member names are case-sensitive.
func TestMembersAsTheDecoderReadsThem(t *testing.T) {
	s := For(reflect.TypeFor[namedInline]())
	var got namedInline
	if err := s.Set(&got, "/depth", "3"); err == nil {
		t.Errorf("Set /depth accepted (%+v): the decoder reads no such member", got)
	}
	if err := s.Set(&got, "/Inner", `{"depth":3}`); err != nil || got.Inner.Depth != 3 {
		t.Errorf("Set /Inner: %+v, %v", got, err)
	}
	sh := For(reflect.TypeFor[shadowed]())
	if ft, ok := sh.At("/x"); !ok || ft.Kind() != reflect.Int {
		t.Errorf("At(/x) = %v, %t; want the top-level int", ft, ok)
	}
	if out, err := sh.Convert("/x", "5"); err != nil || !decodesStrictly(`{"x":`+out+`}`, new(shadowed)) {
		t.Errorf("Convert(/x, 5) = %s, %v: not what the document's x decodes", out, err)
	}
	ti := For(reflect.TypeFor[tied]())
	if ft, ok := ti.At("/X"); !ok || ft.Kind() != reflect.String {
		t.Errorf("At(/X) = %v, %t; want the tagged string, as encoding/json breaks the tie", ft, ok)
	}
	c := For(reflect.TypeFor[caseDoc]())
	for _, v := range []string{`{"CPU":2}`, "CPU: 2", `{"cpu":1,"CPU":2}`} {
		if out, err := c.Convert("/limits", v); err == nil {
			t.Errorf("Convert(/limits, %q) = %s: the strict decoder refuses it", v, out)
		}
	}
	if out, err := c.Convert("/limits", "cpu: 2"); err != nil || out != `{"cpu":2}` {
		t.Errorf("Convert(/limits, cpu: 2) = %s, %v", out, err)
	}
}
