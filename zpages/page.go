package zpages

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/munnerz/goautoneg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// object names one of a page's objects as an Accept header asks for it:
// application/json;as=KIND;v=VERSION;g=GROUP.
type object struct{ kind, version, group string }

// reply is a page's answers: its text, and its objects; def answers an
// Accept of application/json with no parameters, nil when there is none.
type reply struct {
	text    string
	objects map[object]any
	def     any
}

// page serves what build replies, negotiated.
func page(build func(*http.Request) (*reply, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "z-pages are read-only", http.StatusMethodNotAllowed)
			return
		}
		rep, err := build(r)
		switch {
		case errors.Is(err, ErrBadRequest):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case errors.Is(err, ErrNotFound):
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Vary", "Accept")
		media, obj, ok := negotiate(r.Header.Get("Accept"), rep)
		if !ok {
			notAcceptable(w, rep)
			return
		}
		var body []byte
		switch {
		case obj == nil:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			body = []byte(rep.text)
		case strings.HasPrefix(media, "application/yaml"):
			body, err = yaml.Marshal(obj)
		default:
			body, err = json.Marshal(obj)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if obj != nil {
			w.Header().Set("Content-Type", media)
		}
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

// maxMediaRanges bounds the media ranges of an Accept header the pages
// read, and maxParams its parameters: one with more is answered 406
// without being parsed, so that a request's cost is bounded whatever its
// header holds (net/http allows a megabyte of header, some eighty
// thousand ranges, or a hundred thousand parameters of one range).
const maxMediaRanges, maxParams = 32, 4 * maxMediaRanges

// mediaRange is one range of an Accept header.
type mediaRange struct {
	media  string
	params map[string]string
	q      float64
}

// specificity orders ranges of one quality: a type with parameters before
// the bare type, before type/*, before */*.
func (m mediaRange) specificity() int {
	switch {
	case m.media == "*/*":
		return 0
	case strings.HasSuffix(m.media, "/*"):
		return 1
	case len(m.params) == 0:
		return 2
	}
	return 3
}

// offer is one form a page can answer in.
type offer struct {
	media string // "text/plain", "application/json", "application/yaml"
	obj   any    // nil for text
	as    object // for an object named by its kind, version and group
	named bool   // asked for by name only: ranges with as, v and g
}

// negotiate picks what to answer accept with: the media type to send and
// the object (nil for text). Each form the page has gets the quality of
// the most specific range that matches it (RFC 9110, 12.5.1): for an
// object named by kind, version and group, a range naming it; for the
// others, an exact type before type/* before */*. q=0 refuses. The form of
// the highest quality wins; a tie goes to the form whose range comes
// first by quality and specificity, then to the page's own order (its
// default object, then text). An empty Accept is */*. Its cost is linear
// in the header's length: a header of more than maxMediaRanges ranges is
// refused before any is parsed.
func negotiate(accept string, rep *reply) (string, any, bool) {
	if strings.TrimSpace(accept) == "" {
		accept = "*/*"
	}
	if strings.Count(accept, ",") >= maxMediaRanges || strings.Count(accept, ";") >= maxParams {
		return "", nil, false
	}
	ranges := parseAccept(accept)
	slices.SortStableFunc(ranges, func(a, b mediaRange) int {
		if a.q != b.q {
			if a.q > b.q {
				return -1
			}
			return 1
		}
		return b.specificity() - a.specificity()
	})
	var offers []offer
	for _, o := range slices.SortedFunc(maps.Keys(rep.objects), func(a, b object) int { return strings.Compare(a.kind+a.version+a.group, b.kind+b.version+b.group) }) {
		for _, m := range []string{"application/json", "application/yaml"} {
			offers = append(offers, offer{media: m, obj: rep.objects[o], as: o, named: true})
		}
	}
	if rep.def != nil {
		offers = append(offers, offer{media: "application/json", obj: rep.def})
	}
	offers = append(offers, offer{media: "text/plain"})
	best, bestQ, bestRank := -1, 0.0, 0
	for i, o := range offers {
		q, rank := decide(ranges, o)
		if q > bestQ || q > 0 && q == bestQ && rank < bestRank {
			best, bestQ, bestRank = i, q, rank
		}
	}
	if best < 0 {
		return "", nil, false
	}
	o := offers[best]
	if o.named {
		return fmt.Sprintf("%s;g=%s;v=%s;as=%s", o.media, o.as.group, o.as.version, o.as.kind), o.obj, true
	}
	return o.media, o.obj, true
}

// parseAccept reads the ranges of an Accept header, in the header's
// order, each with goautoneg, the parser the Kubernetes API server
// negotiates with: media types and parameter names compared in lower
// case, as RFC 9110 has them ("Q=0" refuses as "q=0" does), and a range
// whose quality is above 1 left out. A quality that does not parse is 0,
// as goautoneg reads it. goautoneg sorts a header's ranges with an
// unstable sort: read one at a time, they keep the order a tie is broken
// by.
func parseAccept(accept string) []mediaRange {
	var ranges []mediaRange
	for _, text := range strings.Split(accept, ",") {
		parts := strings.Split(text, ";")
		for i, p := range parts[1:] {
			name, value, _ := strings.Cut(p, "=")
			parts[i+1] = strings.ToLower(strings.TrimSpace(name)) + "=" + value
		}
		for _, a := range goautoneg.ParseAccept(strings.Join(parts, ";")) {
			if a.Q < 0 || a.Q > 1 {
				continue
			}
			ranges = append(ranges, mediaRange{strings.ToLower(a.Type + "/" + a.SubType), a.Params, a.Q})
		}
	}
	return ranges
}

// decide returns the quality ranges give o, and the rank of the range
// that decides it: the most specific that matches o, and of those the
// first. No matching range is quality 0.
func decide(ranges []mediaRange, o offer) (q float64, rank int) {
	typ, _, _ := strings.Cut(o.media, "/")
	level := -1 // how specific the deciding range is
	for i, r := range ranges {
		as, named := r.params["as"]
		var l int
		switch {
		case o.named:
			if !named || r.media != o.media || (object{as, r.params["v"], r.params["g"]}) != o.as {
				continue
			}
			l = 3
		case named:
			continue // a range naming an object is for that object alone
		case r.media == o.media:
			l = 2
		case r.media == typ+"/*":
			l = 1
		case r.media == "*/*":
			l = 0
		default:
			continue
		}
		if l > level {
			level, q, rank = l, r.q, i
		}
	}
	return q, rank
}

// notAcceptable answers 406 with a Status naming what may be asked for.
func notAcceptable(w http.ResponseWriter, rep *reply) {
	accepted := []string{"text/plain"}
	for o := range rep.objects {
		for _, m := range []string{"application/json", "application/yaml"} {
			accepted = append(accepted, fmt.Sprintf("%s;as=%s;v=%s;g=%s", m, o.kind, o.version, o.group))
		}
	}
	if rep.def != nil {
		accepted = append(accepted, "application/json")
	}
	slices.Sort(accepted)
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Reason:   metav1.StatusReasonNotAcceptable,
		Code:     http.StatusNotAcceptable,
		Message:  fmt.Sprintf("only the following media types are accepted, in at most %d ranges: %s", maxMediaRanges, strings.Join(accepted, ", ")),
	}
	body, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotAcceptable)
	_, _ = w.Write(body)
}
