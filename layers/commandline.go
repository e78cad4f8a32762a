package layers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/stratacfg/strata/internal/secret"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
)

// ConfigFlags are the values of the command line's configuration-file
// flags.
type ConfigFlags struct {
	ConfigFile     string
	ConfigDir      string
	InstanceConfig string
	DecodeMode     string
}

// paths returns the files and directory the flags name, in the order
// they apply.
func (f ConfigFlags) paths() []string {
	var out []string
	for _, p := range []string{f.ConfigFile, f.ConfigDir, f.InstanceConfig} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
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
	kind   *scheme.Kind
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
	cl := &CommandLine{flags: Flags{t: typed.For(c.Kind.MergeFields().Type())}, kind: c.Kind}
	fs := cl.Sections.FlagSet("config")
	fs.StringVar(&cl.Config.ConfigFile, "config", "", "The configuration file. Relative paths in it resolve against its directory.")
	fs.StringVar(&cl.Config.ConfigDir, "config-dir", "", "A directory of drop-in configuration files ("+strings.Join(c.DropIns.extensions(), ", ")+"), applied in lexical order over --config as JSON merge patches.")
	fs.StringVar(&cl.Config.InstanceConfig, "instance-config", "", "A per-instance configuration file, applied over --config and --config-dir and below flags.")
	cl.Config.DecodeMode = "strict"
	fs.Var(decodeMode{&cl.Config.DecodeMode}, "decode-mode", "How unknown and duplicate fields in configuration files are treated: strict (error), warn, or ignore.")
	if c.Flags != nil {
		if err := c.Flags(&cl.Sections, &cl.flags); err != nil {
			return nil, fmt.Errorf("layers: component %s: its flags: %w", c.Name, err)
		}
	}
	if output {
		cl.output = addOutputFlags(cl.Sections.FlagSet("output"), c.Kind.MergeVersion().Version)
	}
	cl.FlagSet = pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	if c.NormalizeFlags != nil {
		cl.FlagSet.SetNormalizeFunc(c.NormalizeFlags)
	}
	cl.FlagSet.SetOutput(discard{})
	cl.FlagSet.Usage = func() {}
	for _, name := range cl.Sections.Order {
		cl.FlagSet.AddFlagSet(cl.Sections.FlagSets[name])
	}
	var own []*pflag.FlagSet
	for _, name := range cl.Sections.Order {
		if name != "config" && name != "output" {
			own = append(own, cl.Sections.FlagSets[name])
		}
	}
	if err := cl.flags.check(cl.FlagSet, own); err != nil {
		return nil, fmt.Errorf("layers: component %s: %w", c.Name, err)
	}
	return cl, nil
}

// decodeMode is --decode-mode: a value other than a mode's name is a
// command line that does not parse, as a number flag's text that is no
// number is.
type decodeMode struct{ s *string }

func (m decodeMode) Type() string { return "string" }

func (m decodeMode) String() string {
	if m.s == nil {
		return ""
	}
	return *m.s
}

func (m decodeMode) Set(v string) error {
	if _, err := scheme.ParseMode(v); err != nil {
		return err
	}
	*m.s = v
	return nil
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

// Usage returns the usage text: every flag, grouped by section, its name
// and type on a line of its own and its description below, wrapped, with
// no padding. A flag bound to a configuration key shows the default the
// component really uses, the one its scheme gives the key, and for a flag
// bound with LegacyDefault its own default without --config; another flag
// shows its own default. Zero defaults are not shown.
func (cl *CommandLine) Usage(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s --config=FILE [--config-dir=DIR] [flags]\n", name)
	defaults := cl.schemeDefaults()
	for _, section := range cl.Sections.Order {
		fs := cl.Sections.FlagSets[section]
		if !fs.HasFlags() {
			continue
		}
		fmt.Fprintf(&b, "\n%s%s flags:\n\n", strings.ToUpper(section[:1]), section[1:])
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			typ, usage := pflag.UnquoteUsage(f)
			line := "      --" + f.Name
			if f.Shorthand != "" {
				line = "  -" + f.Shorthand + ", --" + f.Name
			}
			if typ != "" {
				line += " " + typ
			}
			b.WriteString(line + "\n")
			if def := cl.defaultOf(f, defaults); def != "" {
				if cl.classified(f) {
					def = secret.Classified
				}
				usage += " (default " + def + ")"
			}
			if f.Deprecated != "" {
				usage += " (DEPRECATED: " + f.Deprecated + ")"
			}
			wrap(&b, usage, "                ", 100)
		})
	}
	return b.String()
}

// defaultOf returns the default to show for flag f.
// classified reports whether f's value may be a secret, as /flagz judges
// it: f is annotated "classified", or bound to a key that is, is inside or
// holds a secret field.
func (cl *CommandLine) classified(f *pflag.Flag) bool {
	if len(f.Annotations["classified"]) > 0 {
		return true
	}
	for _, bd := range cl.flags.bindings {
		if bd.name == f.Name && secretAt(cl.kind.MergeFields(), bd.key) {
			return true
		}
	}
	return false
}

func (cl *CommandLine) defaultOf(f *pflag.Flag, defaults map[string]string) string {
	for _, bd := range cl.flags.bindings {
		if bd.name != f.Name {
			continue
		}
		def := showDefault(defaults, bd.key)
		if unq, err := strconv.Unquote(def); err == nil && f.Value.Type() != "string" {
			def = unq // a duration or a quantity, shown as the flag takes it
		}
		if isZeroDefault(def) {
			def = ""
		}
		if bd.legacy && !isZeroDefault(f.DefValue) && f.DefValue != strings.Trim(def, `"`) {
			switch {
			case def == "":
				return f.DefValue + " without --config"
			default:
				return def + "; " + f.DefValue + " without --config"
			}
		}
		return def
	}
	if isZeroDefault(f.DefValue) {
		return ""
	}
	if f.Value.Type() == "string" {
		return strconv.Quote(f.DefValue)
	}
	return f.DefValue
}

// schemeDefaults returns the effective keys of an empty configuration of
// the merge version, defaulted: what the component uses for a key no
// layer sets.
func (cl *CommandLine) schemeDefaults() map[string]string {
	obj, err := cl.kind.New(cl.kind.MergeVersion())
	if err != nil {
		return nil
	}
	cl.kind.Scheme().Default(obj)
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	flat, err := typed.For(cl.kind.MergeFields().Type()).Flatten(raw)
	if err != nil {
		return nil
	}
	return flat
}

// showDefault renders the default of key: a scalar as it is (a string
// quoted), an object or list as JSON, nothing when it is zero or unset.
func showDefault(defaults map[string]string, key string) string {
	v, ok := defaults[key]
	if !ok {
		sub := map[string]string{}
		for k, x := range defaults {
			if rest, ok := strings.CutPrefix(k, key+"/"); ok {
				sub["/"+rest] = x
			}
		}
		if len(sub) == 0 {
			return ""
		}
		doc, err := merge.Unflatten(sub)
		if err != nil {
			return ""
		}
		v = string(doc)
	}
	if isZeroDefault(v) || v == `""` || v == "null" || v == "{}" {
		return ""
	}
	return v
}

// isZeroDefault reports whether a default is not worth showing, as pflag
// judges it.
func isZeroDefault(v string) bool {
	switch v {
	case "", "0", "0s", "false", "[]", "<nil>", "nil":
		return true
	}
	return false
}

// wrap writes text to b in lines of at most width columns, each starting
// with indent.
func wrap(b *strings.Builder, text, indent string, width int) {
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
