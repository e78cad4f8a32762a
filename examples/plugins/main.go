// Command plugins computes the option values of Greenhouse Plugins with
// strata's targeted layers: a PluginDefinition's defaults, a
// PluginPreset's values (or a standalone Plugin's own), the preset's
// override for the Plugin's cluster, then PluginOverrides (Greenhouse's ADR
// 007) in order: no selector, cluster selector only, plugin definition
// only, both; ties by creation time, then name. Every value says where it
// came from; a value from a Secret stays a reference and no Secret is
// ever read.
//
//	plugins template --from-dir DIR --plugin NAMESPACE/NAME
//	plugins template --kubeconfig FILE --plugin NAMESPACE/NAME
//	    print the Plugin's effective option values, their provenance, the
//	    PluginOverrides applied and the layers left out, as one JSON
//	    object; exit 1 with the reason on stderr and nothing on stdout on
//	    an error.
//	plugins diff --override FILE [--delete] (--from-dir DIR | --kubeconfig FILE)
//	    print, for every Plugin whose option values would change if the
//	    PluginOverride in FILE were applied (or, with --delete, deleted),
//	    each option that changes with its value before and after and the
//	    layer that decides each, as one JSON array; nothing when none would
//	    change. The override is ranked as the API server would create
//	    it: an edit keeps the creation time of the one it replaces, a new
//	    one is the newest. Exit 0, or 1 when the change makes a Plugin's
//	    values invalid (listed with the error) or on an error.
//	plugins run --kubeconfig FILE [--metrics-bind-address ADDR]
//	    serve a mutating webhook on Plugins that layers the
//	    PluginOverrides over whatever a Plugin's writer (Greenhouse's
//	    PluginPreset controller, a user) gives, and says in the Plugin's
//	    annotations which applied and what they replaced; have the API
//	    server admit a Plugin again when the overrides change; and refuse,
//	    in a validating webhook, presets, Plugins and overrides that give
//	    an option twice, a cluster two overrides, or an option the
//	    definition does not have. It never writes a Plugin's spec.
//
// Each command also takes what a Greenhouse installation decides and its
// objects do not say: --dns-domain D (Greenhouse's, which a preset's
// expressions read as global.greenhouse.baseDomain), --expressions=false
// (Greenhouse evaluates no preset expression), and --contests=error (two
// overrides as specific as each other that disagree on an option are an
// error, not a warning).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  plugins template (--from-dir DIR | --kubeconfig FILE) --plugin NAMESPACE/NAME [--dns-domain D] [--expressions=false] [--contests=warn|error]
  plugins diff --override FILE [--delete] (--from-dir DIR | --kubeconfig FILE) [--dns-domain D] [--expressions=false] [--contests=warn|error]
  plugins run --kubeconfig FILE [--metrics-bind-address ADDR] [--contests=warn|error]`

// run is the command: 0 on success, 1 on an error, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "template":
		err = template(ctx, args[1:], stdout, stderr)
	case "run":
		err = serve(ctx, args[1:], stderr)
	case "diff":
		err = diff(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "plugins: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "plugins: %v\n%s\n", err, usage)
		return 2
	default:
		fmt.Fprintln(stderr, "plugins:", err)
		return 1
	}
}

// usageError is a command line that cannot be run.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// settingsFlags declares on fs the flags that say what a Greenhouse
// installation decides about values: its DNS domain and whether it
// evaluates PluginPresets' expressions.
func settingsFlags(fs *flag.FlagSet) *greenhouse.Settings {
	s := &greenhouse.Settings{}
	fs.StringVar(&s.DNSDomain, "dns-domain", "", "Greenhouse's --dns-domain, which expressions read as global.greenhouse.baseDomain")
	fs.Func("contests", "warn (default): a contested option is reported; error: it is an error, and no override applies to the Plugin", func(v string) error {
		switch v {
		case "warn", "error":
			s.ContestsAreErrors = v == "error"
			return nil
		}
		return fmt.Errorf("%q: warn or error", v)
	})
	fs.BoolFunc("expressions", "whether Greenhouse evaluates PluginPresets' expressions (its pluginPreset.expressionEvaluationEnabled; default true)", func(v string) error {
		on, err := strconv.ParseBool(v)
		s.NoExpressions = !on
		return err
	})
	return s
}

// parseFlags parses args into fs: -h is flag.ErrHelp, any other mistake
// a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}

// template prints the effective option values of one Plugin.
func template(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins template", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("from-dir", "", "a directory of YAML manifests of PluginDefinitions, PluginPresets, Plugins, Clusters and PluginOverrides")
	kubeconfig := fs.String("kubeconfig", "", "a kubeconfig of the cluster to read them from")
	plugin := fs.String("plugin", "", "the Plugin, NAMESPACE/NAME")
	settings := settingsFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ns, name, ok := strings.Cut(*plugin, "/")
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case (*dir == "") == (*kubeconfig == ""):
		return usagef("give one of --from-dir and --kubeconfig")
	case !ok || ns == "" || name == "" || strings.Contains(name, "/"):
		return usagef("--plugin %q: give NAMESPACE/NAME", *plugin)
	}
	var objs greenhouse.Objects
	if *dir != "" {
		set, err := greenhouse.ReadDir(*dir)
		if err != nil {
			return err
		}
		objs = set
	} else {
		c, err := dynamicClient(*kubeconfig)
		if err != nil {
			return err
		}
		objs = greenhouse.Store{Ctx: ctx, R: greenhouse.APIReader{Client: c}}
	}
	res, err := greenhouse.Effective(objs, ns, name, *settings)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}

func dynamicClient(kubeconfig string) (dynamic.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return dynamic.NewForConfig(cfg)
}
