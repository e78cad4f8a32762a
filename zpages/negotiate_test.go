package zpages

import (
	"mime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pagesReply is a reply with the objects every page may have.
var pagesReply = &reply{text: "t", def: "configz", objects: map[object]any{
	{"Flagz", KubeVersion, KubeGroup}: "kube flagz",
	{"Flagz", Version, Group}:         "own flagz",
	{"Configz", Version, Group}:       "own configz",
}}

// hugeAccept is a header of 80,002 ranges, 720 KB: under net/http's
// megabyte of header.
var hugeAccept = strings.Repeat("text/html;q=0.5,", 40_000) + strings.Repeat("x/y;q=0,", 40_000) + "text/plain,*/*;q=0"

// TestNegotiateBounded answers a header of more than MaxMediaRanges
// ranges 406 without parsing it: the work does not grow with the ranges
// (no allocation however long the header), and the 406 says why.
func TestNegotiateBounded(t *testing.T) {
	if _, _, ok := negotiate(hugeAccept, pagesReply); ok {
		t.Error("a header of 80,002 ranges was negotiated")
	}
	if n := testing.AllocsPerRun(5, func() { negotiate(hugeAccept, pagesReply) }); n != 0 {
		t.Errorf("%v allocations to refuse a 720 KB header, want none", n)
	}
	within := strings.Repeat("x/y;q=0.1,", MaxMediaRanges-1) + "text/plain"
	if media, _, ok := negotiate(within, pagesReply); !ok || media != "text/plain" {
		t.Errorf("%d ranges: %q, %t", MaxMediaRanges, media, ok)
	}
	if _, _, ok := negotiate(within+",text/plain", pagesReply); ok {
		t.Errorf("%d ranges negotiated", MaxMediaRanges+1)
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

// FuzzNegotiate checks negotiate against a plain reading of the rules
// (every range against every refusal) on headers of at most
// MaxMediaRanges ranges, and that a longer one is refused unparsed.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{
		"", "*/*", "text/plain", "application/json", "text/*;q=0, */*",
		"application/json;as=Flagz;v=v1beta1;g=config.k8s.io",
		"application/yaml;as=Flagz;v=v1alpha1;g=zpages.strata.dev;q=0.9, text/plain;q=0.8",
		"application/*;q=0, */*", "*/*;q=0", "text/plain;q=0, application/json;q=0.1",
		"application/json;q=1.5, text/plain;q=abc", ",,,", hugeAccept[:200],
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		media, obj, ok := negotiate(accept, pagesReply)
		if strings.Count(accept, ",") >= MaxMediaRanges {
			if ok {
				t.Fatalf("%d ranges negotiated", strings.Count(accept, ",")+1)
			}
			return
		}
		wantMedia, wantObj, wantOK := plainNegotiate(accept, pagesReply)
		if media != wantMedia || obj != wantObj || ok != wantOK {
			t.Fatalf("%q: %q %v %t, want %q %v %t", accept, media, obj, ok, wantMedia, wantObj, wantOK)
		}
	})
}

// plainNegotiate is negotiate's rule read plainly, quadratic in the
// ranges.
func plainNegotiate(accept string, rep *reply) (string, any, bool) {
	type choice struct {
		media  string
		params map[string]string
		q      float64
	}
	var choices, refused []choice
	for _, part := range strings.Split(accept, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		media, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(s, 64); err != nil || q < 0 || q > 1 {
				continue
			}
			delete(params, "q")
		}
		c := choice{media, params, q}
		if q == 0 {
			refused = append(refused, c)
		} else {
			choices = append(choices, c)
		}
	}
	if strings.TrimSpace(accept) == "" {
		choices = []choice{{media: "*/*", q: 1}}
	}
	specificity := func(c choice) int {
		switch {
		case c.media == "*/*":
			return 0
		case strings.HasSuffix(c.media, "/*"):
			return 1
		case len(c.params) == 0:
			return 2
		}
		return 3
	}
	sort.SliceStable(choices, func(i, j int) bool {
		if choices[i].q != choices[j].q {
			return choices[i].q > choices[j].q
		}
		return specificity(choices[i]) > specificity(choices[j])
	})
	excluded := func(media string) bool {
		for _, r := range refused {
			if r.media == media || r.media == "*/*" || strings.HasSuffix(r.media, "/*") && strings.HasPrefix(media, strings.TrimSuffix(r.media, "*")) {
				return true
			}
		}
		return false
	}
	for _, c := range choices {
		as, hasAs := c.params["as"]
		matches := func(media string) bool {
			return (c.media == media || c.media == "*/*" || c.media == strings.Split(media, "/")[0]+"/*") && !excluded(media)
		}
		switch {
		case hasAs:
			for _, media := range []string{"application/json", "application/yaml"} {
				if c.media == media && !excluded(media) {
					if obj, ok := rep.objects[object{as, c.params["v"], c.params["g"]}]; ok {
						return media + ";g=" + c.params["g"] + ";v=" + c.params["v"] + ";as=" + as, obj, true
					}
				}
			}
		case rep.def != nil && c.media != "text/plain" && c.media != "text/*" && matches("application/json"):
			return "application/json", rep.def, true
		case matches("text/plain"):
			return "text/plain", nil, true
		}
	}
	return "", nil, false
}
