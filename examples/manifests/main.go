// Command manifests loads an admission plugin's static manifest directory
// as kube-apiserver v1.37.2 does (KEP-5793), through strata, and keeps it
// live:
//
//	manifests --dir ABSDIR --plugin ValidatingAdmissionPolicy|MutatingAdmissionPolicy|ValidatingAdmissionWebhook|MutatingAdmissionWebhook
//	          [--once] [--poll-interval D] [--metrics-addr ADDR]
//	manifests --admission-config FILE [--once] [--poll-interval D] [--metrics-addr ADDR]
//	manifests --emit-guard
//
// Every reload attempt prints one JSON line:
//
//	{"status":"success","hash":"sha256:…","apiserverHash":"sha256:…","objects":["ValidatingAdmissionPolicy/a.static.k8s.io",…],"error":""}
//	{"status":"failure","hash":"sha256:…","apiserverHash":"sha256:…","objects":[…],"error":"…"}
//
// objects are the objects in effect after the attempt, sorted: on a
// failure, the previous set, which stays. apiserverHash is what
// kube-apiserver reports for the set in effect in
// apiserver_manifest_admission_config_controller_last_config_info{hash}
// (a refused reload leaves it as it was; empty when nothing was ever
// loaded, or the directory holds no manifest), so that an HA drift check
// knows from the directory what each API server must report. The same content is attempted
// once: a refused directory is not refused again on every poll. With
// --once the command loads once, prints the line and exits 0 on success,
// 1 on failure; otherwise a failed first load exits 1 and the command runs
// until it is stopped. --metrics-addr serves kube-apiserver's reload
// metrics for the plugin on /metrics.
//
// --admission-config reads kube-apiserver's --admission-control-config-file
// with kube-apiserver's own code and loads the staticManifestsDir of every
// plugin it configures; each line then names its "plugin" and "dir". A
// problem across plugins (a directory two share, a plugin configured twice,
// a name two plugins' sets use) is a line of its own,
// {"status":"problem",…,"error":"…"}, printed when it appears, and makes
// --once exit 1. --emit-guard prints a ValidatingAdmissionPolicy and its
// binding that deny creating a webhook configuration under a reserved name
// on a cluster before 1.36, and exits 0.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"k8s.io/component-base/metrics"

	"github.com/stratacfg/strata/examples/manifests/admission"
	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/manifests"
	"github.com/stratacfg/strata/watch"
)

// MetricsSubsystem names the reload metrics as kube-apiserver names those
// of its admission manifests:
// apiserver_manifest_admission_config_controller_automatic_reloads_total
// and its siblings, labelled with the plugin.
const MetricsSubsystem = "apiserver_manifest_admission_config_controller"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// line is what the command prints for a reload attempt, or for a problem
// across plugins.
type line struct {
	Plugin        string   `json:"plugin,omitempty"`
	Dir           string   `json:"dir,omitempty"`
	Status        string   `json:"status"`
	Hash          string   `json:"hash"`
	APIServerHash string   `json:"apiserverHash"`
	Objects       []string `json:"objects"`
	Error         string   `json:"error"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manifests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "The plugin's static manifest directory (an absolute path); its .yaml, .yml and .json files are loaded.")
	plugin := fs.String("plugin", "", "The admission plugin whose kinds the directory holds: "+strings.Join(admission.Plugins, ", ")+".")
	config := fs.String("admission-config", "", "kube-apiserver's --admission-control-config-file: every plugin's staticManifestsDir it names is loaded, instead of --dir and --plugin.")
	guard := fs.Bool("emit-guard", false, "Print a ValidatingAdmissionPolicy and its binding that deny creating, through the API, an object whose name ends in "+admission.StaticSuffix+" (for clusters before 1.36), and exit.")
	once := fs.Bool("once", false, "Load once, print the line, and exit: 0 on success, 1 on failure.")
	poll := fs.Duration("poll-interval", watch.DefaultPollInterval, "How often the directory is read whatever file events say.")
	metricsAddr := fs.String("metrics-addr", "", "Serve /metrics on this address when set.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "manifests: "+format+"\n", a...)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return usage("unexpected argument %q", fs.Arg(0))
	case *guard && fs.NFlag() > 1:
		return usage("--emit-guard takes no other flag")
	case *guard:
		fmt.Fprint(stdout, admission.Guard)
		return 0
	case *config != "" && (*dir != "" || *plugin != ""):
		return usage("--admission-config names the directories: leave out --dir and --plugin")
	case *config == "" && !filepath.IsAbs(*dir):
		return usage("--dir must be an absolute path, not %q", *dir)
	case watch.CheckPollInterval(*poll) != nil || *poll == 0:
		return usage("--poll-interval %s: must be at least %s", *poll, watch.MinPollInterval)
	}
	var targets []admission.PluginDir
	var problems []string
	if *config != "" {
		var err error
		if targets, problems, err = admission.ReadConfig(*config); err != nil {
			fmt.Fprintln(stderr, "manifests: --admission-config:", err)
			return 1
		}
		if len(targets) == 0 {
			fmt.Fprintf(stderr, "manifests: --admission-config: %s gives no plugin a staticManifestsDir\n", *config)
			return 1
		}
	} else {
		if _, err := admission.Options(*plugin); err != nil {
			return usage("--plugin: %v", err)
		}
		targets = []admission.PluginDir{{Plugin: *plugin, Dir: *dir}}
	}
	p := &printer{enc: json.NewEncoder(stdout), named: *config != "", sets: map[string][]string{}, told: map[string]bool{}}
	for _, pr := range problems {
		p.problem(pr)
	}
	if *once {
		failed := len(problems) > 0
		for _, t := range targets {
			opts, _ := admission.Options(t.Plugin)
			var hash string
			var set *manifests.Set
			g, err := watch.Read(t.Dir, manifests.Watch(t.Dir, opts).Read)
			if err == nil {
				hash = g.Hash
				set, err = manifests.Load(g, opts)
			}
			status := watch.StatusSuccess
			if err != nil {
				status, set, failed = watch.StatusFailure, nil, true
			}
			failed = p.print(t, lineOf(status, hash, set, err)) || failed
		}
		if failed {
			return 1
		}
		return 0
	}

	reg := metrics.NewKubeRegistry()
	var watchers []*watch.Watcher[*manifests.Set]
	for _, t := range targets {
		opts, _ := admission.Options(t.Plugin)
		m := watch.NewMetrics(MetricsSubsystem, map[string]string{"plugin": t.Plugin})
		m.MustRegister(reg)
		w := manifests.Watch(t.Dir, opts)
		w.PollInterval = *poll
		w.Metrics = m
		w.OnReload = func(r watch.Reload[*manifests.Set]) { p.print(t, lineOf(r.Status, r.Hash, r.Value, r.Err)) }
		watcher, err := watch.New(w)
		if err != nil {
			fmt.Fprintln(stderr, "manifests:", err)
			return 1
		}
		watchers = append(watchers, watcher)
	}
	if *metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
		srv, ln, err := httpserve.Listen(*metricsAddr, mux)
		if err != nil {
			fmt.Fprintln(stderr, "manifests: --metrics-addr:", err)
			return 1
		}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Fprintf(stderr, "manifests: serving /metrics on %s\n", ln.Addr())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, watcher := range watchers {
		if err := watcher.Start(ctx); err != nil {
			fmt.Fprintf(stderr, "manifests: refusing to start: %s: %v\n", targets[i].Plugin, err)
			cancel()
			for _, started := range watchers[:i] {
				<-started.Done()
			}
			return 1
		}
	}
	<-ctx.Done()
	for _, watcher := range watchers {
		<-watcher.Done()
	}
	return 0
}

// lineOf is the line of a reload attempt: its status and hash, the set in
// effect after it (nil: none), and its error.
func lineOf(status, hash string, set *manifests.Set, err error) line {
	l := line{Status: status, Hash: hash, Objects: []string{}}
	if set != nil {
		l.Objects, l.APIServerHash = set.Names(), set.APIServerHash
	}
	if err != nil {
		l.Error = err.Error()
	}
	return l
}

// printer prints the lines of every plugin's reloads one at a time and,
// for an --admission-config, each problem across plugins once, when it
// appears.
type printer struct {
	mu    sync.Mutex
	enc   *json.Encoder
	named bool                // lines name their plugin and directory
	sets  map[string][]string // the objects in effect, by plugin
	told  map[string]bool     // the problems across plugins printed and still there
}

// print prints l, the outcome of t's reload, then any problem across
// plugins that the sets now in effect show and that was not printed
// while it lasted; it reports whether it printed one.
func (p *printer) print(t admission.PluginDir, l line) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.named {
		l.Plugin, l.Dir = t.Plugin, t.Dir
	}
	p.enc.Encode(l)
	p.sets[t.Plugin] = l.Objects
	now := map[string]bool{}
	printed := false
	for _, c := range admission.NameConflicts(p.sets) {
		now[c] = true
		if !p.told[c] {
			p.enc.Encode(line{Status: statusProblem, Objects: []string{}, Error: c})
			printed = true
		}
	}
	p.told = now
	return printed
}

// problem prints a problem of the configuration itself.
func (p *printer) problem(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enc.Encode(line{Status: statusProblem, Objects: []string{}, Error: msg})
}

// statusProblem is the status of a line about a problem across plugins.
const statusProblem = "problem"
