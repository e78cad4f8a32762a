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
// and the media types there are. The Accept header is read as the API
// server reads it (github.com/munnerz/goautoneg), at most 32 media
// ranges, and each form is worth the quality of the most specific range
// that matches it (RFC 9110).
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
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/version"

	"github.com/stratacfg/strata/internal/secret"
	"github.com/stratacfg/strata/merge"
)

// The paths the pages are served on.
const (
	configzPath = "/configz"
	flagzPath   = "/flagz"
	statuszPath = "/statusz"
)

// strataGroup and strataVersion are those of strata's z-page objects,
// which an Accept header names (the package doc).
const (
	strataGroup   = "zpages.strata.dev"
	strataVersion = "v1alpha1"
)

// kubeGroup and kubeVersion are those of Kubernetes' Flagz and Statusz.
const (
	kubeGroup   = "config.k8s.io"
	kubeVersion = "v1beta1"
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
const Classified = secret.Classified

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
	paths := []string{statuszPath}
	if p.Configs != nil {
		mux.Handle(configzPath, page(p.configz))
		paths = append(paths, configzPath)
	}
	if p.Flags != nil {
		// pflag sorts its flags on the first visit: once here, not by
		// two first requests at once.
		p.Flags.VisitAll(func(*pflag.Flag) {})
		mux.Handle(flagzPath, page(p.flagz))
		paths = append(paths, flagzPath)
	}
	slices.Sort(paths)
	mux.Handle(statuszPath, page(func(r *http.Request) (*reply, error) { return p.statusz(r, paths) }))
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

// header is the head of a text page.
func (p *Pages) header(page string) string {
	return fmt.Sprintf("\n%s %s\n%s\n\n", p.Name, page, warning)
}

// objectMeta names the component in an object.
func (p *Pages) objectMeta() metav1.ObjectMeta { return metav1.ObjectMeta{Name: p.Name} }
