// Command component is a small component that loads its configuration with
// strata: a versioned file, drop-ins, a per-instance file and flags, merged
// at raw-key granularity, strictly decoded, defaulted, converted and
// validated before anything runs.
//
//	component --config FILE [--config-dir DIR] [--instance-config FILE] [flags]
//	component --config FILE --explain        # effective config and provenance
//	component --config FILE --print-config   # effective config as YAML
//	component --config FILE --watch          # keep running, reload on change, serve /configz
package main

import (
	"context"
	"encoding/json"
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

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/metrics"

	"github.com/stratacfg/strata/examples/component/apis/config"
	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/examples/component/apis/config/v1beta1"
	"github.com/stratacfg/strata/layers"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/watch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// output holds the flags that say what to print instead of running, and
// how to run.
type output struct {
	printConfig bool
	explain     bool
	version     string

	watch        bool
	bindAddress  string
	pollInterval time.Duration
}

// newComponent describes the component's configuration and flags.
func newComponent(out *output) (*layers.Component[*config.ComponentConfiguration], error) {
	kind, err := configscheme.NewKind()
	if err != nil {
		return nil, err
	}
	return &layers.Component[*config.ComponentConfiguration]{
		Name: "component",
		Kind: kind,
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) {
			var (
				port      int32
				profiling bool
				cert      string
				gates     = map[string]bool{}
				kubecfg   string
				origins   []string
			)
			fs := fss.FlagSet("generic")
			fs.Int32Var(&port, "port", 10250, "The port to serve on. Without --config it defaults to 10250, the component's historical flag default; the file's default is 8443.")
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

			b.BindLogging(fss.FlagSet("logging"), "/logging")

			o := fss.FlagSet("output")
			o.BoolVar(&out.printConfig, "print-config", false, "Print the effective configuration as YAML in --output-version and exit.")
			o.BoolVar(&out.explain, "explain", false, "Print the effective configuration and where every value came from as JSON, and exit.")
			o.StringVar(&out.version, "output-version", v1beta1.SchemeGroupVersion.Version, "The version --print-config and --explain print.")

			w := fss.FlagSet("live reload")
			w.BoolVar(&out.watch, "watch", false, "Keep running: serve /configz and /metrics on --bind-address and the configured port, and reload when --config, --config-dir or --instance-config change (ConfigMap mounts included).")
			w.StringVar(&out.bindAddress, "bind-address", "127.0.0.1", "The address --watch serves on.")
			w.DurationVar(&out.pollInterval, "poll-interval", watch.DefaultPollInterval, "With --watch, how often the configuration files are read whatever file events say.")
		},
	}, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var out output
	comp, err := newComponent(&out)
	if err != nil {
		fmt.Fprintln(stderr, "component:", err)
		return 1
	}
	cfg, cl, err := comp.Load(ctx, args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprint(stdout, cl.Usage("component"))
		return 0
	case errors.As(err, new(*layers.UsageError)):
		fmt.Fprintf(stderr, "component: %v\n\n%s", err, cl.Usage("component"))
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "component:", err)
		return 1
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, "component: warning:", w)
	}
	gv := schema.GroupVersion{Group: comp.Kind.Group(), Version: out.version}
	switch {
	case out.explain:
		e, err := comp.Explain(cfg, gv)
		if err != nil {
			fmt.Fprintln(stderr, "component:", err)
			return 1
		}
		b, _ := json.MarshalIndent(e, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	case out.printConfig:
		b, err := comp.Kind.Encode(cfg.Object, gv, scheme.YAML)
		if err != nil {
			fmt.Fprintln(stderr, "component:", err)
			return 1
		}
		stdout.Write(b)
		return 0
	}
	c := cfg.Object
	fmt.Fprintf(stderr, "component: configuration loaded: port %d, profiling %t, sync every %s\n", c.Port, c.EnableProfiling, c.SyncFrequency.Duration)
	if !out.watch {
		return 0
	}
	return serve(ctx, comp, cl, &out, stderr)
}

type componentConfig = layers.Config[*config.ComponentConfiguration]

// serve runs the component until ctx is done: it watches its configuration
// files, applies what can change live, says when a restart is needed, and
// serves the effective configuration on /configz and the reload metrics on
// /metrics.
func serve(ctx context.Context, comp *layers.Component[*config.ComponentConfiguration], cl *layers.CommandLine, out *output, stderr io.Writer) int {
	var paths []string
	for _, p := range []string{cl.Options.ConfigFile, cl.Options.ConfigDir, cl.Options.InstanceConfig} {
		if p != "" {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "component: --watch needs --config, --config-dir or --instance-config")
		return 2
	}
	reg := metrics.NewKubeRegistry()
	m := watch.NewMetrics("example_component")
	m.MustRegister(reg)

	var w *watch.Watcher[*componentConfig]
	w, err := watch.New(watch.Options[*componentConfig]{
		Paths:        paths,
		PollInterval: out.pollInterval,
		Metrics:      m,
		// Built from the snapshot the watcher read, never from files
		// of two updates; restart-only keys keep their running values.
		Load: func(ctx context.Context, c *watch.Contents) (*componentConfig, error) {
			return comp.Reload(ctx, cl, c, w.Current())
		},
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
		fmt.Fprintln(stderr, "component:", err)
		return 1
	}
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(stderr, "component: refusing to start:", err)
		return 1
	}
	addr := net.JoinHostPort(out.bindAddress, strconv.Itoa(int(w.Current().Object.Port)))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "component:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.HandlerFor(reg, metrics.HandlerOpts{}))
	mux.HandleFunc("/configz", func(rw http.ResponseWriter, _ *http.Request) {
		b, err := comp.Kind.Encode(w.Current().Object, v1beta1.SchemeGroupVersion, scheme.JSON)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Write(b)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "component: serving /configz and /metrics on %s\n", ln.Addr())
	<-ctx.Done()
	srv.Close()
	<-w.Done()
	return 0
}
