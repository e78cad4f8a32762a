// Package zpages serves the z-pages of a component or controller built on
// strata: /configz (the effective configuration), /flagz (the flags as
// set) and /statusz (the process and its configuration), each value with
// where it came from.
//
// The pages follow Kubernetes' z-pages. /configz answers component-base's
// configz JSON ({"NAME": CONFIG}) by default; /flagz and /statusz answer
// text by default, and Kubernetes' Flagz and Statusz objects
// (config.k8s.io/v1beta1) in JSON or YAML to an Accept header that names
// them: `application/json;as=Flagz;v=v1beta1;g=config.k8s.io`. strata's own
// objects, in group zpages.strata.dev/v1alpha1, add what Kubernetes' leave
// out: the source of every configuration key (Configz), the key each flag
// sets and whether the command line set it (Flagz), the configuration's
// files and the keys waiting for a restart (Statusz). text/plain asks for
// text, which shows the sources too. Any other Accept is refused with 406
// and the media types there are.
//
// The pages are read-only (GET and HEAD) and show no secret: a key
// Config.Secret reports, a flag annotated "classified" (as client-go
// annotates its credential flags) and a flag bound to a secret key show
// CLASSIFIED, and the values lower layers set for a key are never shown.
package zpages

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/version"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/merge"
)

// The paths the pages are served on.
const (
	ConfigzPath = "/configz"
	FlagzPath   = "/flagz"
	StatuszPath = "/statusz"
)

// Group and Version are those of strata's z-page objects.
const (
	Group   = "zpages.strata.dev"
	Version = "v1alpha1"
)

// KubeGroup and KubeVersion are those of Kubernetes' Flagz and Statusz.
const (
	KubeGroup   = "config.k8s.io"
	KubeVersion = "v1beta1"
)

// ErrBadRequest marks an error of Pages.Configs that the request is to
// blame for (a namespace that cannot be one): the page answers 400. Any
// other error answers 503.
var ErrBadRequest = errors.New("bad request")

// ErrNotFound marks an error of Pages.Configs for a configuration there is
// none of (a namespace a controller holds nothing for): the page answers
// 404.
var ErrNotFound = errors.New("not found")

// GoFlags returns fs, a command line of the standard flag package, as a
// pflag.FlagSet for Pages.Flags, each flag marked changed when fs's
// command line set it. Call it after fs is parsed.
func GoFlags(fs *flag.FlagSet) *pflag.FlagSet {
	out := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	out.AddGoFlagSet(fs)
	fs.Visit(func(f *flag.Flag) {
		if pf := out.Lookup(f.Name); pf != nil {
			pf.Changed = true
		}
	})
	return out
}

// Classified replaces a secret value.
const Classified = "CLASSIFIED"

// warning heads every text page, as Kubernetes' z-pages say it.
const warning = "Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only."

// Mux is where Install installs the pages: an *http.ServeMux, or a map of
// handlers (controller-runtime's metrics server ExtraHandlers) through
// Handlers.
type Mux interface {
	Handle(path string, h http.Handler)
}

// Handlers adapts a map of handlers by path to a Mux.
type Handlers map[string]http.Handler

// Handle sets h at path.
func (m Handlers) Handle(path string, h http.Handler) { m[path] = h }

// Pages says what the z-pages show. Every function is called on each
// request, so the pages show what is in effect then.
type Pages struct {
	// Name names the component or controller.
	Name string
	// Configs returns the configurations /configz shows, by name; the
	// request lets a controller show one namespace's (?namespace=NS). A
	// nil Configs serves no /configz.
	Configs func(r *http.Request) (map[string]Config, error)
	// Flags is the command line /flagz shows; nil serves no /flagz.
	Flags *pflag.FlagSet
	// FlagKeys maps a flag's name to the configuration key it sets.
	FlagKeys map[string]string
	// SecretKey reports the configuration keys whose values are or hold
	// a secret; a flag bound to one is shown CLASSIFIED. Nil: none.
	SecretKey func(key string) bool
	// Status returns what /statusz says of the configuration; nil says
	// nothing of it.
	Status func() Status
	// Started is when the process started; the time Install is called
	// when zero.
	Started time.Time
	// BinaryVersion is the binary's version; when empty, component-base's
	// version.Get(), or the main module's version when the build did not
	// set that.
	BinaryVersion string
}

// Config is one configuration /configz shows.
type Config struct {
	// Object is the effective configuration as JSON, in a versioned form
	// with apiVersion and kind.
	Object json.RawMessage
	// Provenance holds the effective keys of Object's version and where
	// each came from.
	Provenance *merge.Result
	// Secret reports the keys whose values are secret: they show
	// CLASSIFIED. Nil: none.
	Secret func(key string) bool
}

// Status is what /statusz says of the configuration.
type Status struct {
	// Loaded is when the configuration in effect was loaded.
	Loaded time.Time `json:"loaded,omitzero"`
	// Hash identifies the configuration in effect (its files' hash).
	Hash string `json:"hash,omitempty"`
	// Sources lists the layers it was merged from, most generic first.
	Sources []string `json:"sources,omitempty"`
	// RestartRequired lists the keys whose new values wait for a restart.
	RestartRequired []string `json:"restartRequired,omitempty"`
	// LastError is why the last reload was refused, if it was.
	LastError string `json:"lastError,omitempty"`
}

// Install installs /configz, /flagz and /statusz on mux, those Pages has
// something for; /statusz lists the paths installed.
func Install(mux Mux, p Pages) {
	if p.Started.IsZero() {
		p.Started = time.Now()
	}
	if p.BinaryVersion == "" {
		p.BinaryVersion = binaryVersion()
	}
	paths := []string{StatuszPath}
	if p.Configs != nil {
		mux.Handle(ConfigzPath, page(p.configz))
		paths = append(paths, ConfigzPath)
	}
	if p.Flags != nil {
		// pflag sorts its flags on the first visit: once here, not by
		// two first requests at once.
		p.Flags.VisitAll(func(*pflag.Flag) {})
		mux.Handle(FlagzPath, page(p.flagz))
		paths = append(paths, FlagzPath)
	}
	slices.Sort(paths)
	mux.Handle(StatuszPath, page(func(r *http.Request) (*reply, error) { return p.statusz(r, paths) }))
}

// binaryVersion is the version component-base's version.Get gives when a
// build set it, the main module's otherwise.
func binaryVersion() string {
	if v := version.Get().GitVersion; !strings.Contains(v, "$Format") {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}

// reply is a page's answers: its text, and its objects by media type
// parameters ("as;v;g"); def answers an Accept of application/json with no
// parameters, nil when there is none.
type reply struct {
	text    string
	objects map[string]any
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

// negotiate picks what to answer accept with: the media type to send and
// the object (nil for text). The media ranges are tried by quality, then
// the most specific first; a range with q=0 is refused, and so is what
// only refused ranges match. An empty Accept gets the default object when
// there is one (configz's JSON), text otherwise, as */* does.
func negotiate(accept string, rep *reply) (string, any, bool) {
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
					if obj, ok := rep.objects[as+";"+c.params["v"]+";"+c.params["g"]]; ok {
						return fmt.Sprintf("%s;g=%s;v=%s;as=%s", media, c.params["g"], c.params["v"], as), obj, true
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

// notAcceptable answers 406 with a Status naming what may be asked for.
func notAcceptable(w http.ResponseWriter, rep *reply) {
	accepted := []string{"text/plain"}
	for k := range rep.objects {
		parts := strings.Split(k, ";")
		for _, m := range []string{"application/json", "application/yaml"} {
			accepted = append(accepted, fmt.Sprintf("%s;as=%s;v=%s;g=%s", m, parts[0], parts[1], parts[2]))
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
		Message:  "only the following media types are accepted: " + strings.Join(accepted, ", "),
	}
	body, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotAcceptable)
	_, _ = w.Write(body)
}

// header is the head of a text page.
func (p *Pages) header(page string) string {
	return fmt.Sprintf("\n%s %s\n%s\n\n", p.Name, page, warning)
}

// objectMeta names the component in an object.
func (p *Pages) objectMeta() metav1.ObjectMeta { return metav1.ObjectMeta{Name: p.Name} }

// KeySource is where one configuration key's value came from.
type KeySource struct {
	// Source is the layer that set the value in effect.
	Source string `json:"source"`
	// Shadowed lists the lower layers that set it too, the nearest
	// first; their values are not shown.
	Shadowed []string `json:"shadowed,omitempty"`
}

// Configz is strata's /configz object: each configuration with the source
// of every key.
type Configz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Configurations    map[string]ConfigzEntry `json:"configurations"`
}

// ConfigzEntry is one configuration and its sources.
type ConfigzEntry struct {
	Config  json.RawMessage      `json:"config"`
	Sources map[string]KeySource `json:"sources"`
}

func (p *Pages) configz(r *http.Request) (*reply, error) {
	configs, err := p.Configs(r)
	if err != nil {
		return nil, err
	}
	plain := map[string]json.RawMessage{}
	obj := &Configz{TypeMeta: metav1.TypeMeta{Kind: "Configz", APIVersion: Group + "/" + Version}, ObjectMeta: p.objectMeta(), Configurations: map[string]ConfigzEntry{}}
	var b strings.Builder
	b.WriteString(p.header("configz"))
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := configs[name]
		shown, values, err := c.shown()
		if err != nil {
			return nil, fmt.Errorf("configuration %s: %w", name, err)
		}
		plain[name] = shown
		entry := ConfigzEntry{Config: shown, Sources: map[string]KeySource{}}
		fmt.Fprintf(&b, "[%s]\n", name)
		for _, key := range slices.Sorted(maps.Keys(values)) {
			if key == "/apiVersion" || key == "/kind" {
				continue
			}
			src := c.sourceOf(key)
			entry.Sources[key] = src
			fmt.Fprintf(&b, "%s=%s (%s)\n", key, values[key], src.line())
		}
		obj.Configurations[name] = entry
	}
	return &reply{text: b.String(), objects: map[string]any{"Configz;" + Version + ";" + Group: obj}, def: plain}, nil
}

// shown returns the configuration with its secret values classified, and
// its keys flattened.
func (c Config) shown() (json.RawMessage, map[string]string, error) {
	if c.Secret == nil {
		values, err := merge.Flatten(c.Object)
		return c.Object, values, err
	}
	var doc any
	if err := json.Unmarshal(c.Object, &doc); err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(classify(doc, "", c.Secret))
	if err != nil {
		return nil, nil, err
	}
	// The text is written from the classified document: a leaf of the
	// flattened keys may be a list that holds a secret.
	values, err := merge.Flatten(out)
	return out, values, err
}

// classify replaces what secret reports under key in v.
func classify(v any, key string, secret func(string) bool) any {
	if key != "" && secret(key) {
		return Classified
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = classify(e, key+"/"+merge.Pointer(k)[1:], secret)
		}
	case []any:
		for i, e := range t {
			t[i] = classify(e, key+"/"+strconv.Itoa(i), secret)
		}
	}
	return v
}

// sourceOf is the source of key, or of the nearest ancestor a layer set.
func (c Config) sourceOf(key string) KeySource {
	if c.Provenance == nil {
		return KeySource{Source: "unknown"}
	}
	for k := key; k != ""; k = parent(k) {
		if p, ok := c.Provenance.Explain(k); ok {
			out := KeySource{Source: p.Source.String()}
			for _, s := range p.Shadowed {
				out.Shadowed = append(out.Shadowed, s.Source.String())
			}
			return out
		}
	}
	return KeySource{Source: "default"}
}

func (s KeySource) line() string {
	if len(s.Shadowed) == 0 {
		return s.Source
	}
	return s.Source + "; shadows " + strings.Join(s.Shadowed, ", ")
}

func parent(key string) string {
	if i := strings.LastIndexByte(key, '/'); i > 0 {
		return key[:i]
	}
	return ""
}

// KubeFlagz is Kubernetes' Flagz object (config.k8s.io/v1beta1).
type KubeFlagz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Flags             map[string]string `json:"flags,omitempty"`
}

// Flagz is strata's /flagz object: each flag's value, whether the command
// line set it, and the configuration key it sets.
type Flagz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Flags             map[string]Flag `json:"flags"`
}

// Flag is one flag as set.
type Flag struct {
	Value string `json:"value"`
	// Set says that the command line set it; otherwise Value is its
	// default.
	Set bool `json:"set"`
	// Key is the configuration key the flag sets, if it sets one.
	Key string `json:"key,omitempty"`
}

func (p *Pages) flagz(*http.Request) (*reply, error) {
	kube := &KubeFlagz{TypeMeta: metav1.TypeMeta{Kind: "Flagz", APIVersion: KubeGroup + "/" + KubeVersion}, ObjectMeta: p.objectMeta(), Flags: map[string]string{}}
	own := &Flagz{TypeMeta: metav1.TypeMeta{Kind: "Flagz", APIVersion: Group + "/" + Version}, ObjectMeta: p.objectMeta(), Flags: map[string]Flag{}}
	var b strings.Builder
	b.WriteString(p.header("flagz"))
	p.Flags.VisitAll(func(f *pflag.Flag) {
		key := p.FlagKeys[f.Name]
		value := f.Value.String()
		if len(f.Annotations["classified"]) > 0 || key != "" && p.SecretKey != nil && p.SecretKey(key) {
			value = Classified
		}
		kube.Flags[f.Name] = value
		own.Flags[f.Name] = Flag{Value: value, Set: f.Changed, Key: key}
		from := "default"
		if f.Changed {
			from = "command line"
		}
		if key != "" {
			from += ", sets " + key
		}
		fmt.Fprintf(&b, "%s=%s (%s)\n", f.Name, value, from)
	})
	return &reply{text: b.String(), objects: map[string]any{
		"Flagz;" + KubeVersion + ";" + KubeGroup: kube,
		"Flagz;" + Version + ";" + Group:         own,
	}}, nil
}

// KubeStatusz is Kubernetes' Statusz object (config.k8s.io/v1beta1).
type KubeStatusz struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	StartTime         metav1.Time `json:"startTime"`
	UptimeSeconds     int64       `json:"uptimeSeconds"`
	GoVersion         string      `json:"goVersion"`
	BinaryVersion     string      `json:"binaryVersion"`
	EmulationVersion  string      `json:"emulationVersion,omitempty"`
	Paths             []string    `json:"paths"`
}

// Statusz is strata's /statusz object: Kubernetes' and the configuration.
type Statusz struct {
	KubeStatusz   `json:",inline"`
	Configuration *Status `json:"configuration,omitempty"`
}

func (p *Pages) statusz(_ *http.Request, paths []string) (*reply, error) {
	now := time.Now()
	kube := KubeStatusz{
		TypeMeta:      metav1.TypeMeta{Kind: "Statusz", APIVersion: KubeGroup + "/" + KubeVersion},
		ObjectMeta:    p.objectMeta(),
		StartTime:     metav1.NewTime(p.Started),
		UptimeSeconds: int64(now.Sub(p.Started).Seconds()),
		GoVersion:     runtime.Version(),
		BinaryVersion: p.BinaryVersion,
		Paths:         paths,
	}
	own := &Statusz{KubeStatusz: kube}
	own.APIVersion = Group + "/" + Version
	var b strings.Builder
	b.WriteString(p.header("statusz"))
	up := now.Sub(p.Started)
	fmt.Fprintf(&b, "Started: %s\nUp: %d hr %02d min %02d sec\nGo version: %s\nBinary version: %s\nPaths: %s\n",
		p.Started.Format(time.UnixDate), int(up.Hours()), int(up.Minutes())%60, int(up.Seconds())%60,
		kube.GoVersion, kube.BinaryVersion, strings.Join(paths, " "))
	if p.Status != nil {
		s := p.Status()
		own.Configuration = &s
		if !s.Loaded.IsZero() {
			fmt.Fprintf(&b, "Configuration loaded: %s\n", s.Loaded.Format(time.UnixDate))
		}
		if s.Hash != "" {
			fmt.Fprintf(&b, "Configuration hash: %s\n", s.Hash)
		}
		if len(s.Sources) > 0 {
			fmt.Fprintf(&b, "Configuration sources: %s\n", strings.Join(s.Sources, ", "))
		}
		if len(s.RestartRequired) > 0 {
			fmt.Fprintf(&b, "Restart required: %s\n", strings.Join(s.RestartRequired, " "))
		}
		if s.LastError != "" {
			fmt.Fprintf(&b, "Last reload refused: %s\n", s.LastError)
		}
	}
	return &reply{text: b.String(), objects: map[string]any{
		"Statusz;" + KubeVersion + ";" + KubeGroup: kube,
		"Statusz;" + Version + ";" + Group:         own,
	}}, nil
}
