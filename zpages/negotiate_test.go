package zpages

import (
	"fmt"
	"strings"
	"testing"
)

// pagesReply is a reply with the objects every page may have.
var pagesReply = &reply{text: "t", def: "configz", objects: map[object]any{
	{"Flagz", kubeVersion, kubeGroup}:       "kube flagz",
	{"Flagz", strataVersion, strataGroup}:   "own flagz",
	{"Configz", strataVersion, strataGroup}: "own configz",
}}

// hugeAccept is a header of 80,002 ranges, 720 KB: under net/http's
// megabyte of header.
var hugeAccept = strings.Repeat("text/html;q=0.5,", 40_000) + strings.Repeat("x/y;q=0,", 40_000) + "text/plain,*/*;q=0"

// TestNegotiateBounded answers a header of more than maxMediaRanges
// ranges 406 without parsing it: the work does not grow with the ranges
// (no allocation however long the header), and the 406 says why.
func TestNegotiateBounded(t *testing.T) {
	if _, _, ok := negotiate(hugeAccept, pagesReply); ok {
		t.Error("a header of 80,002 ranges was negotiated")
	}
	if n := testing.AllocsPerRun(5, func() { negotiate(hugeAccept, pagesReply) }); n != 0 {
		t.Errorf("%v allocations to refuse a 720 KB header, want none", n)
	}
	within := strings.Repeat("x/y;q=0.1,", maxMediaRanges-1) + "text/plain"
	if media, _, ok := negotiate(within, pagesReply); !ok || media != "text/plain" {
		t.Errorf("%d ranges: %q, %t", maxMediaRanges, media, ok)
	}
	if _, _, ok := negotiate(within+",text/plain", pagesReply); ok {
		t.Errorf("%d ranges negotiated", maxMediaRanges+1)
	}
}

func BenchmarkNegotiate(b *testing.B) {
	for name, accept := range map[string]string{
		"kube":  "application/json;as=Flagz;v=v1beta1;g=config.k8s.io",
		"empty": "",
		"huge":  hugeAccept,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				negotiate(accept, pagesReply)
			}
		})
	}
}

// FuzzNegotiate checks negotiate against RFC 9110's rule read plainly:
// each form the page has is worth the quality of the most specific range
// that matches it; what negotiate answers is a form of the highest worth,
// which is more than 0, and it refuses only when every form is worth 0.
// A header of more than maxMediaRanges ranges or maxParams parameters is
// refused unparsed.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{
		"", "*/*", "text/plain", "application/json", "text/*;q=0, */*",
		"application/json;as=Flagz;v=v1beta1;g=config.k8s.io",
		"application/yaml;as=Flagz;v=v1alpha1;g=zpages.strata.dev;q=0.9, text/plain;q=0.8",
		"application/*;q=0, */*", "*/*;q=0", "text/plain;q=0, application/json;q=0.1",
		"application/json;q=1.5, text/plain;q=abc", ",,,", hugeAccept[:200],
		"application/json, */*;q=0", "text/plain, */*;q=0", "*/*;q=1, application/json;q=0.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		media, obj, ok := negotiate(accept, pagesReply)
		if strings.Count(accept, ",") >= maxMediaRanges || strings.Count(accept, ";") >= maxParams {
			if ok {
				t.Fatalf("%d ranges, %d parameters negotiated", strings.Count(accept, ",")+1, strings.Count(accept, ";"))
			}
			return
		}
		worth := worthRFC(accept, pagesReply)
		most := 0.0
		for _, w := range worth {
			most = max(most, w)
		}
		if !ok {
			if most > 0 {
				t.Fatalf("%q refused, but a form is worth %v: %v", accept, most, worth)
			}
			return
		}
		key := media
		if obj == nil {
			key = "text/plain"
		} else if obj == pagesReply.def {
			key = "application/json"
		}
		if w := worth[key]; w <= 0 || w != most {
			t.Fatalf("%q: answered %s, worth %v, where the best is worth %v: %v", accept, key, w, most, worth)
		}
	})
}

// worthRFC is each form of rep, keyed as negotiate names it, with the
// quality accept gives it by RFC 9110: that of the most specific range
// matching it, the highest of several equally specific.
func worthRFC(accept string, rep *reply) map[string]float64 {
	if strings.TrimSpace(accept) == "" {
		accept = "*/*"
	}
	// The ranges as the pages read them (goautoneg, the API server's
	// parser): what is checked here is the choice among them.
	type rng = mediaRange
	ranges := parseAccept(accept)
	best := func(match func(r rng) int) float64 {
		level, q := -1, 0.0
		for _, r := range ranges {
			l := match(r)
			if l > level || l == level && l >= 0 && r.q > q {
				level, q = l, r.q
			}
		}
		return q
	}
	out := map[string]float64{}
	for o := range rep.objects {
		for _, m := range []string{"application/json", "application/yaml"} {
			out[m+";g="+o.group+";v="+o.version+";as="+o.kind] = best(func(r rng) int {
				if as, ok := r.params["as"]; ok && r.media == m && as == o.kind && r.params["v"] == o.version && r.params["g"] == o.group {
					return 0
				}
				return -1
			})
		}
	}
	plain := func(m string) float64 {
		typ := strings.Split(m, "/")[0]
		return best(func(r rng) int {
			if _, ok := r.params["as"]; ok {
				return -1
			}
			switch r.media {
			case m:
				return 2
			case typ + "/*":
				return 1
			case "*/*":
				return 0
			}
			return -1
		})
	}
	if rep.def != nil {
		out["application/json"] = plain("application/json")
	}
	out["text/plain"] = plain("text/plain")
	return out
}

// TestNegotiateParams: parameter names compare in any case, as RFC 9110
// has them (Q=0 refuses a form as q=0 does); a tie goes to the range the
// header names first however many ranges it has; and a header's
// parameters are bounded as its ranges are, one range of a megabyte of
// them refused unparsed.
func TestNegotiateParams(t *testing.T) {
	for _, accept := range []string{"text/plain;q=0", "text/plain;Q=0", "text/plain; Q=0"} {
		if media, _, ok := negotiate(accept, &reply{text: "t"}); ok {
			t.Errorf("%q: answered %s, the only form refused", accept, media)
		}
	}
	if media, obj, ok := negotiate("application/json;Q=0, text/plain;q=0.5", pagesReply); !ok || obj != nil {
		t.Errorf("application/json;Q=0, text/plain;q=0.5: answered %s %v, want text/plain", media, obj)
	}
	rep := &reply{text: "t", def: "configz"}
	for n := range maxMediaRanges - 2 {
		var tail []string
		for i := range n {
			tail = append(tail, fmt.Sprintf("x/y%d;q=0.%d", i, 1+i%9))
		}
		for first, second := range map[string]string{"text/plain": "application/json", "application/json": "text/plain"} {
			accept := strings.Join(append([]string{first, second}, tail...), ",")
			if media, _, ok := negotiate(accept, rep); !ok || media != first {
				t.Errorf("%d ranges, %s first: answered %s", n+2, first, media)
			}
		}
	}
	params := "text/plain" + strings.Repeat(";p=x", 1<<18)
	if _, _, ok := negotiate(params, pagesReply); ok {
		t.Error("a range of 262,144 parameters was negotiated")
	}
	if n := testing.AllocsPerRun(5, func() { negotiate(params, pagesReply) }); n != 0 {
		t.Errorf("%v allocations to refuse a megabyte of parameters, want none", n)
	}
}
