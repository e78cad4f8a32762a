package layers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/scheme"
)

// outputFlags are the values of Execute's output flags.
type outputFlags struct {
	explain bool
	upgrade string
	print   bool
	migrate bool
	version string
	writeTo string
	mode    fileMode
}

// fileMode is a file's permissions as a flag, in octal.
type fileMode fs.FileMode

func (m *fileMode) String() string { return fmt.Sprintf("%04o", uint32(*m)) }
func (m *fileMode) Type() string   { return "mode" }
func (m *fileMode) Set(s string) error {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return fmt.Errorf("%q is not a file mode: give permissions in octal, as 0640", s)
	}
	*m = fileMode(v)
	return nil
}

func addOutputFlags(fs *pflag.FlagSet, version string) *outputFlags {
	o := &outputFlags{mode: 0o600}
	fs.BoolVar(&o.explain, "explain", false, "Print the effective configuration in --output-version and where every value came from, as JSON, and exit.")
	fs.StringVar(&o.upgrade, "explain-upgrade", "", "Print, as JSON, what rewriting the --config file in this version as it is (its apiVersion alone changed) would change: each key whose default differs between the two versions and that nothing else sets, its value and source now and after; and exit. --migrate-config writes the file so that nothing changes.")
	fs.BoolVar(&o.print, "print-config", false, "Print the effective configuration in --output-version as YAML, and exit.")
	fs.StringVar(&o.version, "output-version", version, "The version --explain, --print-config and --write-config-to use.")
	fs.StringVar(&o.writeTo, "write-config-to", "", "Write the effective configuration in --output-version as YAML to this file, and exit. An existing file is replaced atomically and keeps its mode; a symbolic link is written through; a FIFO or a device (/dev/stdout) is written to.")
	fs.Var(&o.mode, "write-config-mode", "The mode --write-config-to creates a new file with, less the umask; an existing file keeps its own.")
	fs.BoolVar(&o.migrate, "migrate-config", false, "Print what the --config file itself sets (relative paths kept relative, no flags or other files), and the defaults of its version that --output-version would give another value, in --output-version as YAML, and exit; with --config-dir, each drop-in too, after a comment naming it; with --write-config-to, write it there instead (a directory, with --config-dir).")
	return o
}

// Execute is a component's command: strata's standard flags and their
// behaviour around the component's own run function.
//
//  1. Build the command line (NewCommandLine) with an "output" section:
//     --explain, --print-config, --output-version (the merge version by
//     default) and --write-config-to.
//  2. Parse args (without the command name). --help prints the usage on
//     stdout and returns 0; a usage error (a --decode-mode that is no
//     mode, an --output-version that is not a version of the kind)
//     prints it on stderr with the usage and returns 2.
//  3. Load the configuration. An error is printed on stderr and returns
//     1; decoding warnings are printed on stderr.
//  4. --explain prints the configuration and its provenance as JSON,
//     --explain-upgrade VERSION what upgrading the --config file to
//     VERSION would change (ExplainUpgrade), as JSON,
//     --print-config the configuration as YAML, --write-config-to writes
//     that YAML to a file (replacing a regular file whole, never half
//     written, keeping its mode; writing through a link, into a FIFO or
//     a device; a new file private unless --write-config-mode says
//     otherwise); each returns 0 without running. --explain writes
//     nothing, so with --write-config-to or --migrate-config it is a
//     usage error; so are two flags that would each print (--explain,
//     --print-config, --migrate-config), and --explain-upgrade with any
//     other.
//  5. Otherwise call run; an error it returns is printed on stderr and
//     returns 1, or 2 with the usage when it is a *UsageError (a flag
//     combination the component refuses).
//
// Every message on stderr starts with the component's name. The result is
// the process's exit code.
func (c *Component[T]) Execute(ctx context.Context, args []string, stdout, stderr io.Writer, run func(ctx context.Context, cl *CommandLine, cfg *Loaded[T]) error) int {
	cl, err := c.NewExecuteCommandLine() // (1)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return 1
	}
	switch err := cl.Parse(args); { // (2)
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprint(stdout, cl.Usage(c.Name))
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n\n%s", c.Name, err, cl.Usage(c.Name))
		return 2
	}
	return c.ExecuteParsed(ctx, cl, stdout, stderr, run)
}

// NewExecuteCommandLine is the command line Execute parses:
// NewCommandLine's sections and Execute's "output" section. A program
// whose flags something else parses (a Cobra command) adds its FlagSet
// there, and calls ExecuteParsed once they are parsed.
func (c *Component[T]) NewExecuteCommandLine() (*CommandLine, error) {
	return c.newCommandLine(true)
}

// ExecuteParsed is Execute from step 3 on, over cl (from
// NewExecuteCommandLine) once its flags are parsed: the checks of the
// output flags, then loading, the output flags' work or run. It returns
// the process's exit code, and prints what Execute prints.
func (c *Component[T]) ExecuteParsed(ctx context.Context, cl *CommandLine, stdout, stderr io.Writer, run func(ctx context.Context, cl *CommandLine, cfg *Loaded[T]) error) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return 1
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n\n%s", c.Name, err, cl.Usage(c.Name))
		return 2
	}
	out := cl.output
	if out == nil {
		return fail(errors.New("layers: ExecuteParsed needs the command line of NewExecuteCommandLine"))
	}
	// emit writes b to --write-config-to when given, and to stdout when
	// print is set.
	emit := func(b []byte, print bool) int {
		if out.writeTo != "" {
			if err := files.Write(out.writeTo, b, fs.FileMode(out.mode)); err != nil {
				return fail(fmt.Errorf("--write-config-to: %w", err))
			}
		}
		if print {
			stdout.Write(b)
		}
		return 0
	}
	gv, err := c.outputVersion("--output-version", out.version)
	switch {
	case err != nil:
	case out.migrate && cl.Config.ConfigFile == "" && cl.Config.ConfigDir == "":
		err = errors.New("--migrate-config rewrites the --config file and the drop-ins of --config-dir: give one")
	case out.explain && out.writeTo != "":
		err = errors.New("--explain prints and writes nothing: give --write-config-to without it")
	case out.explain && out.migrate:
		err = errors.New("--explain explains the effective configuration, --migrate-config rewrites the file: give one")
	case out.explain && out.print:
		err = errors.New("--explain prints the effective configuration as JSON, --print-config as YAML: give one")
	case out.migrate && out.print:
		err = errors.New("--migrate-config prints the --config file rewritten, --print-config the effective configuration: give one")
	case out.upgrade != "" && (out.explain || out.migrate || out.print || out.writeTo != ""):
		err = errors.New("--explain-upgrade prints what an upgrade would change, and nothing else: give it alone")
	case out.upgrade != "" && cl.Config.ConfigFile == "":
		err = errors.New("--explain-upgrade previews the upgrade of the --config file: give one")
	}
	var upgradeTo schema.GroupVersion
	if err == nil && out.upgrade != "" {
		upgradeTo, err = c.outputVersion("--explain-upgrade", out.upgrade)
	}
	if err != nil {
		return usage(err)
	}
	if out.migrate {
		migrated, err := c.Migrate(ctx, cl, gv)
		if err != nil {
			return fail(err)
		}
		for _, m := range migrated {
			for _, w := range m.Warnings {
				fmt.Fprintf(stderr, "%s: warning: %s\n", c.Name, w)
			}
			for _, k := range m.Kept {
				fmt.Fprintf(stderr, "%s: --migrate-config: %s keeps %s\n", c.Name, m.Path, k)
			}
		}
		if len(migrated) == 1 && cl.Config.ConfigDir == "" {
			return emit(migrated[0].Document, out.writeTo == "")
		}
		if out.writeTo != "" {
			if err := writeMigrations(out.writeTo, cl, migrated, fs.FileMode(out.mode)); err != nil {
				return fail(fmt.Errorf("--write-config-to: %w", err))
			}
			return 0
		}
		for i, m := range migrated {
			if i > 0 {
				fmt.Fprintln(stdout, "---")
			}
			fmt.Fprintf(stdout, "# %s\n%s", m.Path, m.Document)
		}
		return 0
	}
	cfg, err := c.LoadFrom(ctx, cl) // (3)
	if err != nil {
		return fail(err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "%s: warning: %s\n", c.Name, w)
	}
	for _, s := range cfg.Skipped {
		// A subdirectory with a drop-in's name surprises; a README does not.
		if strings.HasSuffix(s, ": a directory") || strings.HasSuffix(s, ": a symbolic link to a directory") {
			fmt.Fprintf(stderr, "%s: warning: skipped %s\n", c.Name, s)
		}
	}
	switch { // (4)
	case out.upgrade != "":
		changes, err := c.ExplainUpgrade(ctx, cl, cfg, upgradeTo)
		if err != nil {
			return fail(err)
		}
		b, err := json.MarshalIndent(struct {
			To      string          `json:"to"`
			Changes []UpgradeChange `json:"changes"`
		}{upgradeTo.String(), changes}, "", "  ")
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, string(b))
		return 0
	case out.explain:
		e, err := c.Explain(cfg, gv)
		if err != nil {
			return fail(err)
		}
		b, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, string(b))
		return 0
	case out.print, out.writeTo != "":
		b, err := c.Kind.Encode(cfg.Object, gv, scheme.YAML)
		if err != nil {
			return fail(fmt.Errorf("--output-version: %w", err))
		}
		return emit(b, out.print)
	}
	err = run(ctx, cl, cfg) // (5)
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		return usage(err)
	case err != nil:
		return fail(err)
	}
	return 0
}

// outputVersion reads the version flag names (--output-version,
// --explain-upgrade): a version of the kind, alone ("v1beta1") or with its
// group ("config.example.dev/v1beta1"), which is the spelling of an
// apiVersion.
func (c *Component[T]) outputVersion(flag, s string) (schema.GroupVersion, error) {
	group, v := c.Kind.GroupKind().Group, s
	if g, ver, ok := strings.Cut(s, "/"); ok {
		if g != group {
			return schema.GroupVersion{}, fmt.Errorf("%s %q: the configuration's group is %s, not %s", flag, s, group, g)
		}
		v = ver
	}
	var known []string
	for _, ver := range c.Kind.Versions() {
		if ver.Lifecycle == scheme.Removed {
			continue
		}
		if ver.Version == v {
			return schema.GroupVersion{Group: group, Version: v}, nil
		}
		known = append(known, ver.Version)
	}
	return schema.GroupVersion{}, fmt.Errorf("%s %q: not a version of %s; give one of %s, alone or as %s/VERSION",
		flag, s, c.Kind.GroupKind().Kind, strings.Join(known, ", "), group)
}

// writeMigrations writes each migration into dir, a directory, under the
// name of what it migrates: the --config file by its base name, a drop-in
// under the base name of --config-dir, at its place in it.
func writeMigrations(dir string, cl *CommandLine, migrated []Migration, mode fs.FileMode) error {
	for _, m := range migrated {
		name := filepath.Base(m.Path)
		if d := cl.Config.ConfigDir; d != "" && m.Path != cl.Config.ConfigFile {
			rel, err := filepath.Rel(d, m.Path)
			if err != nil {
				return err
			}
			name = filepath.Join(filepath.Base(d), rel)
		}
		to := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := files.Write(to, m.Document, mode); err != nil {
			return err
		}
	}
	return nil
}
