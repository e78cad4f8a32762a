// Command example is examples/component's configuration in a Cobra tree:
// `example serve` loads it with strata's flags and behaviour
// (stratacobra.Bind) and prints the port it would serve on; `example
// version` is a plain Cobra command beside it.
//
//	example serve --config FILE [--config-dir DIR] [--port N] [--explain] ...
//	example version
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratacfg/strata/examples/component/apis/config"
	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/integrations/stratacobra"
	"github.com/stratacfg/strata/layers"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := newRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
	os.Exit(stratacobra.ExitCode(root.ExecuteContext(ctx)))
}

// newRoot builds the tree.
func newRoot() (*cobra.Command, error) {
	kind, err := configscheme.NewKind()
	if err != nil {
		return nil, err
	}
	comp := &layers.Component[*config.ComponentConfiguration]{
		Name:           "example",
		Kind:           kind,
		NormalizeFlags: cliflag.WordSepNormalizeFunc, // --decode_mode is --decode-mode
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var port int32
			fss.FlagSet("generic").Int32Var(&port, "port", 10250, "The port to serve on.")
			b.Bind("port", "/port", &port, layers.LegacyDefault())
			return nil
		},
	}
	root := &cobra.Command{Use: "example", Short: "A component in a Cobra tree"}
	serve := &cobra.Command{Use: "serve", Short: "Load the configuration and say what would be served"}
	err = stratacobra.Bind(serve, comp, func(_ context.Context, cmd *cobra.Command, _ *layers.CommandLine, cfg *layers.Loaded[*config.ComponentConfiguration]) error {
		src, _ := cfg.Provenance.SourceOf("/port")
		fmt.Fprintf(cmd.OutOrStdout(), "would serve on port %d (from %s)\n", cfg.Object.Port, src)
		return nil
	})
	if err != nil {
		return nil, err
	}
	version := &cobra.Command{Use: "version", Short: "Print the version", Args: cobra.NoArgs, Run: func(cmd *cobra.Command, _ []string) {
		fmt.Fprintln(cmd.OutOrStdout(), "example v0.0.0")
	}}
	root.AddCommand(serve, version)
	return root, nil
}
