// Command component is a small component that loads its configuration with
// strata: a versioned file, drop-ins, a per-instance file and flags, merged
// at raw-key granularity, strictly decoded, defaulted, converted and
// validated before anything runs.
//
//	component --config FILE [--config-dir DIR] [--instance-config FILE] [flags]
//	component --config FILE --explain        # effective config and provenance
//	component --config FILE --print-config   # effective config as YAML
//	component --config FILE --write-config-to OUT --output-version v1alpha1
//	component --config FILE --watch          # keep running, reload on change, serve the z-pages
//
// The command line is layers.Component.Execute's, the live reload
// layers.Component.Watch's.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/metrics"

	"github.com/stratacfg/strata/examples/component/apis/config"
	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/examples/component/apis/config/validation"
	"github.com/stratacfg/strata/internal/httpserve"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/watch"
	"github.com/stratacfg/strata/zpages"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// runFlags are the component's own flags that say how to run.
type runFlags struct {
	watch        bool
	bindAddress  string
	pollInterval time.Duration
}

// newComponent describes the component's configuration and flags.
func newComponent(rf *runFlags) (*layers.Component[*config.ComponentConfiguration], error) {
	kind, err := configscheme.NewKind()
	if err != nil {
		return nil, err
	}
	return &layers.Component[*config.ComponentConfiguration]{
		Name:         "component",
		Kind:         kind,
		FeatureGates: validation.NewFeatureGate,
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var (
				port      int32
				profiling bool
				cert      string
				gates     = map[string]bool{}
				kubecfg   string
				origins   []string
				hostname  string
			)
			fs := fss.FlagSet("generic")
			fs.Int32Var(&port, "port", 10250, "The port to serve on. Without --config it defaults to 10250, the component's historical flag default; the file's default is 8443 (8080 in a v1alpha1 file).")
			b.Bind("port", "/port", &port, layers.LegacyDefault())
			fs.BoolVar(&profiling, "enable-profiling", true, "Enable /debug/pprof handlers.")
			b.Bind("enable-profiling", "/enableProfiling", &profiling)
			fs.StringVar(&cert, "tls-cert-file", "", "The serving certificate. A relative path resolves against the working directory.")
			b.Bind("tls-cert-file", "/tlsCertFile", &cert)
			fs.Var(cliflag.NewMapStringBool(&gates), "feature-gates", "Feature gates, key=value pairs; they merge per key with the file's featureGates.")
			b.Bind("feature-gates", "/featureGates", &gates)
			fs.StringVar(&kubecfg, "kubeconfig", "", "The kubeconfig file for the API server client.")
			b.Bind("kubeconfig", "/clientConnection/kubeconfig", &kubecfg)
			fs.StringSliceVar(&origins, "allowed-origins", nil, "The CORS origins allowed; replaces the file's whole list.")
			b.Bind("allowed-origins", "/allowedOrigins", &origins)
			fs.StringVar(&hostname, "hostname-override", "", "The name this instance goes by instead of its host name; one instance's own, as --instance-config's.")
			b.Bind("hostname-override", "/hostnameOverride", &hostname)

			b.BindLogging(fss.FlagSet("logging"), "/logging")

			w := fss.FlagSet("live reload")
			w.BoolVar(&rf.watch, "watch", false, "Keep running: serve /configz, /flagz, /statusz and /metrics on --bind-address and the configured port, and reload when --config, --config-dir or --instance-config change (ConfigMap mounts included).")
			w.StringVar(&rf.bindAddress, "bind-address", "127.0.0.1", "The address --watch serves on.")
			w.DurationVar(&rf.pollInterval, "poll-interval", watch.DefaultPollInterval, "With --watch, how often the configuration files are read whatever file events say.")
			b.NotConfiguration("how the example runs, not what it is configured to do", "watch", "bind-address", "poll-interval")
			return nil
		},
	}, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var rf runFlags
	comp, err := newComponent(&rf)
	if err != nil {
		fmt.Fprintln(stderr, "component:", err)
		return 1
	}
	return comp.Execute(ctx, args, stdout, stderr, func(ctx context.Context, cl *layers.CommandLine, cfg *componentConfig) error {
		c := cfg.Object
		fmt.Fprintf(stderr, "component: configuration loaded: port %d, profiling %t, sync every %s\n", c.Port, c.EnableProfiling, c.SyncFrequency.Duration)
		if !rf.watch {
			return nil
		}
		if cl.Config.ConfigFile == "" && cl.Config.ConfigDir == "" && cl.Config.InstanceConfig == "" {
			return &layers.UsageError{Err: errors.New("--watch needs --config, --config-dir or --instance-config")}
		}
		if err := watch.CheckPollInterval(rf.pollInterval); err != nil || rf.pollInterval == 0 {
			return &layers.UsageError{Err: fmt.Errorf("--poll-interval %s: must be at least %s", rf.pollInterval, watch.MinPollInterval)}
		}
		return serve(ctx, comp, cl, cfg, &rf, stderr)
	})
}

type componentConfig = layers.Loaded[*config.ComponentConfiguration]

// serve runs the component until ctx is done: it watches its configuration
// files from what run was given, applies what can change live, says when a
// restart is needed, and serves the effective configuration on /configz
// and the reload metrics on /metrics.
func serve(ctx context.Context, comp *layers.Component[*config.ComponentConfiguration], cl *layers.CommandLine, cfg *componentConfig, rf *runFlags, stderr io.Writer) error {
	reg := metrics.NewKubeRegistry()
	m := watch.NewMetrics("example_component", nil)
	m.MustRegister(reg)
	w, err := comp.Watch(ctx, cl, layers.WatchOptions[*config.ComponentConfiguration]{
		PollInterval: rf.pollInterval,
		Metrics:      m,
		From:         cfg,
		OnReload: func(r watch.Reload[*componentConfig]) {
			switch {
			case r.Status == watch.StatusFailure:
				fmt.Fprintf(stderr, "component: reload refused, keeping the running configuration: %v\n", r.Err)
			case r.Initial:
			default:
				c := r.Value.Object
				fmt.Fprintf(stderr, "component: configuration reloaded (%s): profiling %t, feature gates %v\n", r.Hash, c.EnableProfiling, c.FeatureGates)
				if len(r.Value.RestartRequired) > 0 {
					fmt.Fprintf(stderr, "component: restart required to apply %s\n", strings.Join(r.Value.RestartRequired, ", "))
				}
			}
		},
	})
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	addr := net.JoinHostPort(rf.bindAddress, strconv.Itoa(int(w.Current().Object.Port)))
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	// /statusz says why the last reload was refused, until one applies.
	zpages.Install(mux, comp.WatchedZPages(cl, w))
	srv, ln, err := httpserve.Listen(addr, mux)
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "component: serving /configz, /flagz, /statusz and /metrics on %s\n", ln.Addr())
	<-ctx.Done()
	srv.Close()
	<-w.Done()
	return nil
}
