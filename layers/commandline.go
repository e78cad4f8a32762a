package layers

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratacfg/strata/internal/typed"
)

// ConfigFlags are the values of the command line's configuration-file
// flags.
type ConfigFlags struct {
	ConfigFile     string
	ConfigDir      string
	InstanceConfig string
	DecodeMode     string
}

// CommandLine is a component's command line: an isolated flag set that
// holds only the component's own flags (nothing a third-party package
// registered on a global flag set appears or parses), in named sections.
type CommandLine struct {
	Sections cliflag.NamedFlagSets
	FlagSet  *pflag.FlagSet
	// Config holds the values of --config, --config-dir,
	// --instance-config and --decode-mode once parsed.
	Config ConfigFlags
	flags  Flags
	output *outputFlags // Execute's flags, nil otherwise
}

// NewCommandLine builds the component's flag sets: a "config" section with
// --config, --config-dir, --instance-config and --decode-mode, then the
// sections Component.Flags adds. Every binding is checked here, so that a
// mistake fails at start-up whether or not the flag is used: a flag bound
// but not registered, a key that is no field of the merge version, or a
// flag whose value cannot be the key's. The error names each flag.
func (c *Component[T]) NewCommandLine() (*CommandLine, error) {
	return c.newCommandLine(false)
}

func (c *Component[T]) newCommandLine(output bool) (*CommandLine, error) {
	if c.Kind == nil {
		return nil, errors.New("layers: component " + c.Name + " has no Kind")
	}
	cl := &CommandLine{flags: Flags{t: typed.For(c.Kind.MergeFields().Type())}}
	fs := cl.Sections.FlagSet("config")
	fs.StringVar(&cl.Config.ConfigFile, "config", "", "The configuration file. Relative paths in it resolve against its directory.")
	fs.StringVar(&cl.Config.ConfigDir, "config-dir", "", "A directory of drop-in configuration files ("+strings.Join(DropInExtensions, ", ")+"), applied in lexical order over --config as JSON merge patches.")
	fs.StringVar(&cl.Config.InstanceConfig, "instance-config", "", "A per-instance configuration file, applied over --config and --config-dir and below flags.")
	fs.StringVar(&cl.Config.DecodeMode, "decode-mode", "strict", "How unknown and duplicate fields in configuration files are treated: strict (error), warn, or ignore.")
	if c.Flags != nil {
		c.Flags(&cl.Sections, &cl.flags)
	}
	if output {
		cl.output = addOutputFlags(cl.Sections.FlagSet("output"), c.Kind.MergeVersion().Version)
	}
	cl.FlagSet = pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	cl.FlagSet.SetOutput(discard{})
	cl.FlagSet.Usage = func() {}
	for _, name := range cl.Sections.Order {
		cl.FlagSet.AddFlagSet(cl.Sections.FlagSets[name])
	}
	if err := cl.flags.check(cl.FlagSet); err != nil {
		return nil, fmt.Errorf("layers: component %s: %w", c.Name, err)
	}
	return cl, nil
}

// UsageError is a command line that does not parse. It wraps
// pflag.ErrHelp for --help.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the parse error.
func (e *UsageError) Unwrap() error { return e.Err }

// Parse parses args (without the command name). Its errors are
// *UsageError; errors.Is(err, pflag.ErrHelp) for --help.
func (cl *CommandLine) Parse(args []string) error {
	if err := cl.FlagSet.Parse(args); err != nil {
		return &UsageError{Err: err}
	}
	if cl.FlagSet.NArg() > 0 {
		return &UsageError{Err: fmt.Errorf("unexpected argument %q: this command takes only flags", cl.FlagSet.Arg(0))}
	}
	return nil
}

// Usage returns the usage text: every flag, grouped by section.
func (cl *CommandLine) Usage(name string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Usage: %s --config=FILE [--config-dir=DIR] [flags]\n", name)
	cliflag.PrintSections(&b, cl.Sections, 100)
	return b.String()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
