package layers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stratacfg/strata/scheme"
)

// outputFlags are the values of Execute's output flags.
type outputFlags struct {
	explain bool
	print   bool
	migrate bool
	version string
	writeTo string
}

func addOutputFlags(fs *pflag.FlagSet, version string) *outputFlags {
	o := &outputFlags{}
	fs.BoolVar(&o.explain, "explain", false, "Print the effective configuration in --output-version and where every value came from, as JSON, and exit.")
	fs.BoolVar(&o.print, "print-config", false, "Print the effective configuration in --output-version as YAML, and exit.")
	fs.StringVar(&o.version, "output-version", version, "The version --explain, --print-config and --write-config-to use.")
	fs.StringVar(&o.writeTo, "write-config-to", "", "Write the effective configuration in --output-version as YAML to this file, and exit.")
	fs.BoolVar(&o.migrate, "migrate-config", false, "Print what the --config file itself sets, and nothing else (no defaults, flags or other files; relative paths kept relative), in --output-version as YAML, and exit; with --write-config-to, write it there instead.")
	return o
}

// Execute is a component's command: strata's standard flags and their
// behaviour around the component's own run function.
//
//  1. Build the command line (NewCommandLine) with an "output" section:
//     --explain, --print-config, --output-version (the merge version by
//     default) and --write-config-to.
//  2. Parse args (without the command name). --help prints the usage on
//     stdout and returns 0; a usage error (an --output-version that is not
//     a version of the kind included) prints it on stderr with the usage
//     and returns 2.
//  3. Load the configuration. An error is printed on stderr and returns
//     1; decoding warnings are printed on stderr.
//  4. --explain prints the configuration and its provenance as JSON,
//     --print-config the configuration as YAML, --write-config-to writes
//     that YAML to a file (replacing it whole, never half written); each
//     returns 0 without running.
//  5. Otherwise call run; an error it returns is printed on stderr and
//     returns 1, or 2 with the usage when it is a *UsageError (a flag
//     combination the component refuses).
//
// Every message on stderr starts with the component's name. The result is
// the process's exit code.
func (c *Component[T]) Execute(ctx context.Context, args []string, stdout, stderr io.Writer, run func(ctx context.Context, cl *CommandLine, cfg *Loaded[T]) error) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return 1
	}
	cl, err := c.newCommandLine(true) // (1)
	if err != nil {
		return fail(err)
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n\n%s", c.Name, err, cl.Usage(c.Name))
		return 2
	}
	out := cl.output
	// emit writes b to --write-config-to when given, and to stdout when
	// print is set.
	emit := func(b []byte, print bool) int {
		if out.writeTo != "" {
			if err := writeFile(out.writeTo, b); err != nil {
				return fail(fmt.Errorf("--write-config-to: %w", err))
			}
		}
		if print {
			stdout.Write(b)
		}
		return 0
	}
	switch err := cl.Parse(args); { // (2)
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprint(stdout, cl.Usage(c.Name))
		return 0
	case err != nil:
		return usage(err)
	}
	gv, err := c.outputVersion(out.version)
	if err == nil && out.migrate && cl.Config.ConfigFile == "" {
		err = errors.New("--migrate-config rewrites the --config file: give one")
	}
	if err != nil {
		return usage(err)
	}
	if out.migrate {
		b, err := c.Migrate(cl, gv)
		if err != nil {
			return fail(err)
		}
		return emit(b, out.writeTo == "")
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

// outputVersion reads --output-version: a version of the kind, alone
// ("v1beta1") or with its group ("config.example.dev/v1beta1"), which is
// the spelling of an apiVersion.
func (c *Component[T]) outputVersion(s string) (schema.GroupVersion, error) {
	group, v := c.Kind.Group(), s
	if g, ver, ok := strings.Cut(s, "/"); ok {
		if g != group {
			return schema.GroupVersion{}, fmt.Errorf("--output-version %q: the configuration's group is %s, not %s", s, group, g)
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
	return schema.GroupVersion{}, fmt.Errorf("--output-version %q: not a version of %s; give one of %s, alone or as %s/VERSION",
		s, c.Kind.GroupKind().Kind, strings.Join(known, ", "), group)
}

// writeFile replaces path with data: written to a temporary file beside
// it, synced, then renamed over it, so that a reader sees the old content
// or the new, never a part.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
