// Package stratacobra runs a strata component as a command of a Cobra
// tree, for programs that keep Cobra (kube-scheduler's and kube-proxy's
// shape, most operators' CLIs): Bind gives a *cobra.Command the flags and
// the behaviour of layers.Component.Execute, and leaves the rest of the
// tree to Cobra. It is a module of its own, so that strata's go.mod does
// not require Cobra.
//
//	root := &cobra.Command{Use: "mycomp"}
//	serve := &cobra.Command{Use: "serve", Short: "Serve"}
//	if err := stratacobra.Bind(serve, component, func(ctx context.Context, cmd *cobra.Command, cl *layers.CommandLine, cfg *layers.Loaded[*Config]) error {
//		return run(ctx, cfg.Object)
//	}); err != nil {
//		return err
//	}
//	root.AddCommand(serve, versionCmd)
//	os.Exit(stratacobra.ExitCode(root.ExecuteContext(ctx)))
package stratacobra

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stratacfg/strata/layers"
)

// Bind adds c's flags to cmd: the component's own sections, strata's
// configuration flags (--config, --config-dir, --instance-config,
// --decode-mode) and its output flags (--explain, --print-config,
// --output-version, --write-config-to, --write-config-mode,
// --migrate-config). cmd's RunE then does what Execute does once the
// flags are parsed: load and validate, the output flags' work, or run
// with the loaded configuration. Messages are Execute's, on cmd's output
// and error streams; cmd's help is its Cobra header and Execute's usage.
// A usage error (an unknown flag, an argument, a flag combination
// refused) prints Execute's usage, and every failure returns an error
// that carries Execute's exit code, which Cobra is told not to print
// again (ExitCode reads it); an error of a step Cobra runs before RunE
// (a parent's PersistentPreRunE, a required flag, cmd's PreRunE) is
// Cobra's to print, and it does. cmd takes no arguments; its RunE, Args and
// help are Bind's. The flags' values live as long as the command, as a
// process's do: a tree executed twice (a test's) keeps what the first
// run set, so build the tree anew for each run.
func Bind[T runtime.Object](cmd *cobra.Command, c *layers.Component[T], run func(ctx context.Context, cmd *cobra.Command, cl *layers.CommandLine, cfg *layers.Loaded[T]) error) error {
	cl, err := c.NewExecuteCommandLine()
	if err != nil {
		return err
	}
	if c.NormalizeFlags != nil {
		cmd.Flags().SetNormalizeFunc(c.NormalizeFlags)
	}
	cmd.Flags().AddFlagSet(cl.FlagSet)
	// printed marks a failure Bind printed, for Cobra not to print it
	// again; it reads the flags after the command returns.
	printed := func(cmd *cobra.Command, code int) error {
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		return &exitError{Code: code}
	}
	usage := func(cmd *cobra.Command, err error) error {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n\n%s", c.Name, err, cl.Usage(cmd.CommandPath()))
		return printed(cmd, 2)
	}
	cmd.SetFlagErrorFunc(usage)
	cmd.Args = cobra.ArbitraryArgs // refused in RunE, with the usage
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		out := cmd.OutOrStdout()
		if s := cmd.Long; s != "" {
			fmt.Fprintf(out, "%s\n\n", s)
		} else if s := cmd.Short; s != "" {
			fmt.Fprintf(out, "%s\n\n", s)
		}
		fmt.Fprint(out, cl.Usage(cmd.CommandPath()))
	})
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usage(cmd, fmt.Errorf("unexpected argument %q: this command takes only flags", args[0]))
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		code := c.ExecuteParsed(ctx, cl, cmd.OutOrStdout(), cmd.ErrOrStderr(), func(ctx context.Context, cl *layers.CommandLine, cfg *layers.Loaded[T]) error {
			return run(ctx, cmd, cl, cfg)
		})
		if code != 0 {
			return printed(cmd, code)
		}
		return nil
	}
	return nil
}

// exitError is a bound command's failure, already printed: the exit code
// Execute would have returned.
type exitError struct{ Code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode is the process's exit code for err, what Cobra's Execute
// returned: 0 for nil, a bound command's code, and 1 for any other error
// (another command's, which Cobra printed unless told not to).
func ExitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	}
	return 1
}
