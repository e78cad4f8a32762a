package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stratacfg/strata/examples/plugins/greenhouse"
	"github.com/stratacfg/strata/internal/yamljson"
)

// errInvalidated is the error of a diff that makes a Plugin's values
// invalid: the diff is printed, and the command exits 1.
var errInvalidated = errors.New("the change makes the values of a Plugin invalid")

// maxOverrideBytes bounds --override's file.
const maxOverrideBytes = 1 << 20

// diff prints the blast radius of a PluginOverride: every Plugin whose
// option values it changes, each option before and after.
func diff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("override", "", "a file holding one PluginOverride")
	del := fs.Bool("delete", false, "show what deleting the PluginOverride would change, not applying it")
	dir := fs.String("from-dir", "", "a directory of YAML manifests of PluginDefinitions, PluginPresets, Plugins, Clusters and PluginOverrides")
	kubeconfig := fs.String("kubeconfig", "", "a kubeconfig of the cluster to read them from")
	settings := settingsFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case *file == "":
		return usagef("--override is required")
	case (*dir == "") == (*kubeconfig == ""):
		return usagef("give one of --from-dir and --kubeconfig")
	}
	override, err := readOverride(*file)
	if err != nil {
		return err
	}
	var before *greenhouse.Set
	if *dir != "" {
		if before, err = greenhouse.ReadDir(*dir); err != nil {
			return err
		}
	} else {
		c, err := dynamicClient(*kubeconfig)
		if err != nil {
			return err
		}
		if before, err = (greenhouse.Store{Ctx: ctx, R: greenhouse.APIReader{Client: c}}).All(); err != nil {
			return err
		}
	}
	after := before.Clone()
	id := override.Namespace + "/" + override.Name
	if *del {
		if after.Overrides[id] == nil {
			return fmt.Errorf("--delete: PluginOverride %s does not exist", id)
		}
		delete(after.Overrides, id)
	} else {
		after = before.WithOverride(override)
	}
	diffs := greenhouse.Diff(ctx, before, after, *settings)
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(diffs) == 0 {
		return nil
	}
	out, err := json.MarshalIndent(diffs, "", "  ")
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
		return err
	}
	for _, d := range diffs {
		if d.Error != "" {
			return errInvalidated
		}
	}
	return nil
}

// readOverride reads the one PluginOverride of file, decoded as a
// directory's manifests are.
func readOverride(file string) (*greenhouse.PluginOverride, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxOverrideBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxOverrideBytes {
		return nil, fmt.Errorf("--override %s: over %d bytes", file, maxOverrideBytes)
	}
	set := greenhouse.NewSet()
	id, err := set.AddManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("--override %s: %w", file, err)
	}
	kind, name, _ := strings.Cut(id, " ")
	if kind != greenhouse.KindPluginOverride {
		return nil, fmt.Errorf("--override %s: %s, not a %s PluginOverride", file, cmp.Or(id, "a Secret"), greenhouse.Group)
	}
	if !yamljson.Single(raw) {
		return nil, fmt.Errorf("--override %s: more than one document: the file holds one PluginOverride", file)
	}
	return set.Overrides[name], nil
}
