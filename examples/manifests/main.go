// Command manifests loads an admission plugin's static manifest directory
// as kube-apiserver v1.36.3 does (KEP-5793), through strata, and keeps it
// live:
//
//	manifests --dir ABSDIR --plugin ValidatingAdmissionPolicy|MutatingAdmissionPolicy|ValidatingAdmissionWebhook|MutatingAdmissionWebhook
//	          [--once] [--poll-interval D] [--metrics-addr ADDR]
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

// line is what the command prints for a reload attempt.
type line struct {
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
	case !filepath.IsAbs(*dir):
		return usage("--dir must be an absolute path, not %q", *dir)
	case watch.CheckPollInterval(*poll) != nil || *poll == 0:
		return usage("--poll-interval %s: must be at least %s", *poll, watch.MinPollInterval)
	}
	opts, err := admission.Options(*plugin)
	if err != nil {
		return usage("--plugin: %v", err)
	}

	var mu sync.Mutex // one line at a time
	enc := json.NewEncoder(stdout)
	print := func(l line) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(l)
	}
	if *once {
		l := line{Status: watch.StatusSuccess, Objects: []string{}}
		g, err := watch.Read(*dir, manifests.Watch(*dir, opts).Read)
		if err == nil {
			l.Hash = g.Hash
			var set *manifests.Set
			if set, err = manifests.Load(g, opts); err == nil {
				l.Objects, l.APIServerHash = set.Names(), set.APIServerHash
			}
		}
		if err != nil {
			l.Status, l.Error = watch.StatusFailure, err.Error()
		}
		print(l)
		if err != nil {
			return 1
		}
		return 0
	}

	reg := metrics.NewKubeRegistry()
	m := watch.NewMetrics(MetricsSubsystem, map[string]string{"plugin": *plugin})
	m.MustRegister(reg)
	w := manifests.Watch(*dir, opts)
	w.PollInterval = *poll
	w.Metrics = m
	w.OnReload = func(r watch.Reload[*manifests.Set]) {
		l := line{Status: r.Status, Hash: r.Hash, Objects: []string{}}
		if r.Value != nil {
			l.Objects, l.APIServerHash = r.Value.Names(), r.Value.APIServerHash
		}
		if r.Err != nil {
			l.Error = r.Err.Error()
		}
		print(l)
	}
	watcher, err := watch.New(w)
	if err != nil {
		fmt.Fprintln(stderr, "manifests:", err)
		return 1
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
	if err := watcher.Start(ctx); err != nil {
		fmt.Fprintln(stderr, "manifests: refusing to start:", err)
		return 1
	}
	<-ctx.Done()
	<-watcher.Done()
	return 0
}
