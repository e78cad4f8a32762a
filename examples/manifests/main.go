// Command manifests loads a directory of policy manifests
// (policy.example.strata.dev/v1 Policy and PolicyBinding) as one validated
// set and keeps it live, as kube-apiserver loads manifest-based admission
// configuration (KEP-5793).
//
//	manifests --dir /etc/policies [--poll-interval 1m] [--metrics-addr 127.0.0.1:9090]
//
// Every reload attempt that is not a no-op prints one JSON line:
//
//	{"status":"success","hash":"sha256:…","objects":["Policy/a.static.strata.dev",…]}
//	{"status":"failure","hash":"sha256:…","objects":[…],"error":"…"}
//
// objects are the objects in effect after the attempt, sorted: on failure,
// the previous set, which stays. The initial load prints the same line; if
// it fails the command exits 1.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"k8s.io/component-base/metrics"

	policyv1 "github.com/stratacfg/strata/examples/manifests/apis/policy/v1"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/watch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// line is what the command prints for a reload attempt.
type line struct {
	Status  string   `json:"status"`
	Hash    string   `json:"hash,omitempty"`
	Objects []string `json:"objects"`
	Error   string   `json:"error,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("manifests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "The directory of manifests (an absolute path); its .yaml, .yml and .json files are loaded.")
	poll := fs.Duration("poll-interval", watch.DefaultPollInterval, "How often the directory is read whatever file events say.")
	metricsAddr := fs.String("metrics-addr", "", "Serve /metrics on this address when set.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !filepath.IsAbs(*dir) {
		fmt.Fprintf(stderr, "manifests: --dir must be an absolute path, not %q\n", *dir)
		return 2
	}
	if err := watch.CheckPollInterval(*poll); err != nil || *poll == 0 {
		fmt.Fprintf(stderr, "manifests: --poll-interval %s: must be at least %s\n", *poll, watch.MinPollInterval)
		return 2
	}

	kind, err := policyv1.NewKind()
	if err != nil {
		fmt.Fprintln(stderr, "manifests:", err)
		return 1
	}
	reg := metrics.NewKubeRegistry()
	m := watch.NewMetrics("example_manifests")
	m.MustRegister(reg)

	var mu sync.Mutex // one line at a time
	enc := json.NewEncoder(stdout)
	opts := watch.Manifests(*dir, watch.ManifestOptions{
		Kind:       kind,
		References: policyv1.References,
		Rules:      validation.SetRules{NameSuffix: policyv1.NameSuffix},
	})
	opts.PollInterval = *poll
	opts.Metrics = m
	opts.OnReload = func(r watch.Reload[*watch.ManifestSet]) {
		l := line{Status: r.Status, Hash: r.Hash, Objects: []string{}}
		if r.Value != nil {
			l.Objects = r.Value.Names()
			slices.Sort(l.Objects)
		}
		if r.Err != nil {
			l.Error = r.Err.Error()
		}
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(l)
	}
	w, err := watch.New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "manifests:", err)
		return 1
	}
	if *metricsAddr != "" {
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			fmt.Fprintln(stderr, "manifests: --metrics-addr:", err)
			return 1
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Fprintf(stderr, "manifests: serving /metrics on %s\n", ln.Addr())
	}
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(stderr, "manifests: refusing to start:", err)
		return 1
	}
	<-ctx.Done()
	<-w.Done()
	return 0
}
