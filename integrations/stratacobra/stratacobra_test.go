package stratacobra_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratacfg/strata/examples/component/apis/config"
	configscheme "github.com/stratacfg/strata/examples/component/apis/config/scheme"
	"github.com/stratacfg/strata/integrations/stratacobra"
	"github.com/stratacfg/strata/layers"
)

// tree is root → serve, serve bound to a component; shape changes the
// tree before it runs.
func tree(t *testing.T, shape func(root, serve *cobra.Command)) (root *cobra.Command, ran *bool) {
	t.Helper()
	kind, err := configscheme.NewKind()
	if err != nil {
		t.Fatal(err)
	}
	comp := &layers.Component[*config.ComponentConfiguration]{
		Name: "example", Kind: kind,
		Flags: func(fss *cliflag.NamedFlagSets, b *layers.Flags) error {
			var port int32
			fss.FlagSet("generic").Int32Var(&port, "port", 10250, "The port to serve on.")
			b.Bind("port", "/port", &port)
			return nil
		},
	}
	root = &cobra.Command{Use: "example"}
	serve := &cobra.Command{Use: "serve"}
	ran = new(bool)
	if err := stratacobra.Bind(serve, comp, func(context.Context, *cobra.Command, *layers.CommandLine, *layers.Loaded[*config.ComponentConfiguration]) error {
		*ran = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	root.AddCommand(serve)
	shape(root, serve)
	return root, ran
}

// TestFailureBeforeRunIsPrinted: a failure of the bound command that is
// not Bind's own (the root's PersistentPreRunE, a flag the program marked
// required) is said on stderr with a non-zero exit, as Cobra says it,
// while Bind's own failures are said once.
func TestFailureBeforeRunIsPrinted(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape func(root, serve *cobra.Command)
		args  []string
		code  int
		want  string
	}{
		{"root PersistentPreRunE", func(root, _ *cobra.Command) {
			root.PersistentPreRunE = func(*cobra.Command, []string) error { return errors.New("cannot open --log-file /nope") }
		}, []string{"serve"}, 1, "cannot open --log-file /nope"},
		{"required flag", func(_, serve *cobra.Command) {
			if err := serve.MarkFlagRequired("config"); err != nil {
				t.Fatal(err)
			}
		}, []string{"serve"}, 1, `required flag(s) "config" not set`},
		{"Bind's own usage error, once", func(_, _ *cobra.Command) {}, []string{"serve", "--bogus"}, 2, "example: unknown flag: --bogus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, ran := tree(t, c.shape)
			var stdout, stderr bytes.Buffer
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			root.SetArgs(c.args)
			code := stratacobra.ExitCode(root.ExecuteContext(context.Background()))
			if *ran {
				t.Fatal("run was called")
			}
			if code != c.code || strings.Count(stderr.String(), c.want) != 1 || strings.Contains(stderr.String(), "exit status") {
				t.Errorf("exit %d, stderr %q: want %d and stderr saying %q once", code, stderr.String(), c.code, c.want)
			}
		})
	}
}
