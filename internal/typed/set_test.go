package typed

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	kjson "sigs.k8s.io/json"

	"github.com/stratacfg/strata/merge"
)

// span decodes itself from a JSON duration string and holds no pointer.
type span struct{ d time.Duration }

func (s *span) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	d, err := time.ParseDuration(str)
	s.d = d
	return err
}

type setLevel string

type setInner struct {
	Depth int `json:"depth"`
}

type setPointed struct {
	Far string `json:"far"`
}

type setLimits struct {
	CPU    int               `json:"cpu"`
	Labels map[string]string `json:"labels,omitempty"`
}

type setDoc struct {
	setInner `json:",inline"`
	*setPointed
	On     bool              `json:"on"`
	Count  *int64            `json:"count"`
	Name   string            `json:"name"`
	Level  setLevel          `json:"level"`
	Ratio  float64           `json:"ratio"`
	Size   uint16            `json:"size"`
	Span   *span             `json:"span"`
	Quoted int               `json:"quoted,string"`
	Labels map[string]string `json:"labels"`
	List   []string          `json:"list"`
	Limits setLimits         `json:"limits"`
	Max    *setLimits        `json:"max"`
	Any    any               `json:"any"`
}

// decodeStrictly decodes the document {key: value} as apimachinery's
// strict decoder does, reporting false when it would not decode strictly.
func decodeStrictly(key, value string) (setDoc, bool) {
	var out setDoc
	strict, err := kjson.UnmarshalStrict([]byte(`{"`+strings.TrimPrefix(key, "/")+`":`+value+`}`), &out, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	return out, err == nil && len(strict) == 0
}

// TestSetMatchesDecode checks that Set gives what decoding a document with
// the member gives, and refuses what it cannot do exactly.
func TestSetMatchesDecode(t *testing.T) {
	t.Parallel()
	s := For(reflect.TypeFor[setDoc]())
	for _, tc := range []struct {
		key, value string
		settable   bool
	}{
		{"/on", "true", true},
		{"/on", "false", true},
		{"/count", "0", true},
		{"/count", "-9223372036854775808", true},
		{"/name", `"plain text"`, true},
		{"/name", `"with \"escapes\""`, false},
		{"/level", `"debug"`, true},
		{"/ratio", "1.5e3", true},
		{"/size", "65535", true},
		{"/size", "65536", false},
		{"/span", `"90s"`, true},
		{"/span", `"90s"`, true}, // the second time from the memo
		{"/span", `"soon"`, false},
		{"/depth", "3", true},  // through the inlined struct
		{"/far", `"x"`, false}, // through an embedded pointer
		{"/quoted", `"7"`, false},
		{"/labels", `{"a":"b"}`, true},
		{"/labels", `{}`, true},
		{"/labels", `null`, true},
		{"/labels", `{"a":"b","a":"c"}`, false}, // a duplicate, refused strictly
		{"/labels", `{"a":1}`, false},
		{"/list", `["a"]`, true},
		{"/list", `[]`, true},
		{"/list", `"a"`, false},
		{"/limits", `{"cpu":2,"labels":{"x":"y"}}`, true},
		{"/limits", `{"CPU":2}`, false}, // case-sensitive: an unknown field
		{"/limits", `{"cpu":2,"gpu":1}`, false},
		{"/max", `{"cpu":3}`, true},
		{"/max", `null`, true},
		{"/max", ` null `, true}, // null however spaced leaves the pointer nil
		{"/labels", "\tnull", true},
		{"/any", `{"n":1,"f":1.5,"l":[true,null]}`, true},
		{"/labels/a", `"b"`, false},
		{"/nope", "1", false},
		{"/count", "1.5", false},
	} {
		var got setDoc
		err := s.Set(&got, tc.key, tc.value)
		if (err == nil) != tc.settable {
			t.Errorf("Set(%s, %s): %v, want settable %v", tc.key, tc.value, err, tc.settable)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrNotSettable) || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("Set(%s, %s): error %v does not name the key or match ErrNotSettable", tc.key, tc.value, err)
			}
			continue
		}
		want, ok := decodeStrictly(tc.key, tc.value)
		if !ok {
			t.Fatalf("Set accepted %s=%s, which does not decode strictly", tc.key, tc.value)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Set(%s, %s) = %+v, decoding gives %+v", tc.key, tc.value, got, want)
		}
	}
}

// TestSetReplacesAndRemoves checks that Set replaces what a field held,
// through its pointer when it has one (the value is dst's own) and in a
// new value when it is nil, and that the tombstone zeroes it.
func TestSetReplacesAndRemoves(t *testing.T) {
	t.Parallel()
	s := For(reflect.TypeFor[setDoc]())
	owned := int64(5)
	d := setDoc{Count: &owned, Name: "old", setInner: setInner{Depth: 2}}
	if err := s.Set(&d, "/count", "9"); err != nil || d.Count != &owned || owned != 9 {
		t.Errorf("count %v (owned at %p, %d), err %v: Set must replace the value in place", d.Count, &owned, owned, err)
	}
	if err := s.Set(&d, "/count", "x"); err == nil {
		t.Error("Set accepted a count of x")
	}
	d.Count = nil
	if err := s.Set(&d, "/count", "7"); err != nil || d.Count == nil || *d.Count != 7 || owned == 7 {
		t.Errorf("count %v, err %v: a nil pointer must get a new value", d.Count, err)
	}
	limits := &setLimits{CPU: 4, Labels: map[string]string{"a": "b"}}
	d.Max = limits
	if err := s.Set(&d, "/max", `{"cpu":5}`); err != nil || d.Max != limits || limits.CPU != 5 || limits.Labels != nil {
		t.Errorf("max %+v, err %v: want the same pointee, zeroed and set to cpu 5", d.Max, err)
	}
	if err := s.Set(&d, "/max", " null\n"); err != nil || d.Max != nil {
		t.Errorf("max %+v, err %v: null leaves the pointer nil, as in a document", d.Max, err)
	}
	for _, key := range []string{"/count", "/name", "/depth"} {
		if err := s.Set(&d, key, merge.Tombstone); err != nil {
			t.Fatal(err)
		}
	}
	if d.Count != nil || d.Name != "" || d.Depth != 0 {
		t.Errorf("after tombstones: %+v", d)
	}
	if err := s.Set(d, "/on", "true"); err == nil {
		t.Error("Set accepted a value that is not a pointer")
	}
}

// FuzzSetMatchesDecode sets arbitrary JSON on every kind of member: when
// Set accepts it, decoding gives the same.
func FuzzSetMatchesDecode(f *testing.F) {
	s := For(reflect.TypeFor[setDoc]())
	for _, seed := range [][2]string{{"/on", "true"}, {"/count", "-0"}, {"/name", `"\u00e9"`}, {"/ratio", "1e400"}, {"/span", `"1h"`}, {"/size", "007"},
		{"/labels", `{"a":"b"}`}, {"/list", `["x",null]`}, {"/limits", `{"cpu":1,"labels":{}}`}, {"/max", `{"Cpu":1}`}, {"/any", `[1,{"a":2.5}]`}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		if !json.Valid([]byte(value)) || strings.ContainsAny(key[min(1, len(key)):], `"\/~`) {
			return // layers hold valid JSON under member keys
		}
		var got setDoc
		if s.Set(&got, key, value) != nil {
			return
		}
		want, ok := decodeStrictly(key, value)
		if !ok {
			t.Fatalf("Set accepted %s=%s, which does not decode strictly", key, value)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Set(%s, %s) = %+v, decoding gives %+v", key, value, got, want)
		}
	})
}
