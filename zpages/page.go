package zpages

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

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

// MaxMediaRanges bounds the media ranges of an Accept header the pages
// read: one with more is answered 406 without being parsed, so that a
// request's cost is bounded whatever its header holds (net/http allows a
// megabyte of header, some eighty thousand ranges).
const MaxMediaRanges = 32

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

// refusals are the ranges an Accept header gives q=0.
type refusals struct {
	all   bool            // */*;q=0
	types map[string]bool // "text" of text/*;q=0
	media map[string]bool // "text/plain" of text/plain;q=0
}

func (r refusals) refuse(media string) bool {
	typ, _, _ := strings.Cut(media, "/")
	return r.all || r.types[typ] || r.media[media]
}

// negotiate picks what to answer accept with: the media type to send and
// the object (nil for text). The media ranges are tried by quality, then
// the most specific first; a range with q=0 is refused, and so is what
// only refused ranges match. An empty Accept gets the default object when
// there is one (configz's JSON), text otherwise, as */* does. Its cost is
// linear in the header's length: a header of more than MaxMediaRanges
// ranges is refused before any is parsed.
func negotiate(accept string, rep *reply) (string, any, bool) {
	if strings.TrimSpace(accept) == "" {
		accept = "*/*"
	}
	if strings.Count(accept, ",") >= MaxMediaRanges {
		return "", nil, false
	}
	var choices []mediaRange
	var refused refusals
	for part := range strings.SplitSeq(accept, ",") {
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
		if q > 0 {
			choices = append(choices, mediaRange{media, params, q})
			continue
		}
		switch typ, sub, _ := strings.Cut(media, "/"); {
		case media == "*/*":
			refused.all = true
		case sub == "*":
			if refused.types == nil {
				refused.types = map[string]bool{}
			}
			refused.types[typ] = true
		default:
			if refused.media == nil {
				refused.media = map[string]bool{}
			}
			refused.media[media] = true
		}
	}
	slices.SortStableFunc(choices, func(a, b mediaRange) int {
		if a.q != b.q {
			if a.q > b.q {
				return -1
			}
			return 1
		}
		return b.specificity() - a.specificity()
	})
	for _, c := range choices {
		matches := func(media string) bool {
			typ, _, _ := strings.Cut(media, "/")
			return (c.media == media || c.media == "*/*" || c.media == typ+"/*") && !refused.refuse(media)
		}
		as, hasAs := c.params["as"]
		switch {
		case hasAs:
			want := object{kind: as, version: c.params["v"], group: c.params["g"]}
			if obj, ok := rep.objects[want]; ok && (c.media == "application/json" || c.media == "application/yaml") && !refused.refuse(c.media) {
				return fmt.Sprintf("%s;g=%s;v=%s;as=%s", c.media, want.group, want.version, want.kind), obj, true
			}
		case rep.def != nil && c.media != "text/plain" && c.media != "text/*" && matches("application/json"):
			return "application/json", rep.def, true
		case matches("text/plain"):
			return "text/plain", nil, true
		}
	}
	return "", nil, false
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
		Message:  fmt.Sprintf("only the following media types are accepted, in at most %d ranges: %s", MaxMediaRanges, strings.Join(accepted, ", ")),
	}
	body, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotAcceptable)
	_, _ = w.Write(body)
}
