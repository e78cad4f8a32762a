package layers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"

	"github.com/stratacfg/strata/internal/files"
	"github.com/stratacfg/strata/internal/pipeline"
	"github.com/stratacfg/strata/internal/text"
	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/validation"
	"github.com/stratacfg/strata/watch"
)

// Component describes how a component loads its configuration:
// `name --config=FILE [--config-dir=DIR] [--instance-config=FILE] [flags]`.
// T is the hub (internal) type, a pointer such as *config.MyConfiguration.
type Component[T runtime.Object] struct {
	// Name is the command name, used in usage text.
	Name string
	// Kind is the configuration kind: its codec, the markers of its
	// versions, the merge version and the validator. Its hub type is T.
	Kind *scheme.Kind
	// Flags registers the component's own flags, in named sections, and
	// binds those that set configuration keys. It is called once per
	// command line built; its error fails building the command line.
	Flags func(fss *cliflag.NamedFlagSets, b *Flags) error
	// AllowExperimental lets files use experimental versions.
	AllowExperimental bool
	// DropIns says which files of --config-dir are drop-ins and how they
	// are read; the zero value is strata's policy.
	DropIns DropInPolicy
	// KeepGzip reads files as they are stored. By default a file that
	// starts with gzip's magic bytes is decompressed (within the kind's
	// MaxBytes), and provenance names its source "(gzip)".
	KeepGzip bool
	// FileMode, when set, decodes --config and --instance-config whatever
	// --decode-mode says (kubelet: Warn, its lenient fallback with a
	// warning, while its drop-ins refuse a duplicate field).
	FileMode *scheme.Mode
	// NormalizeFlags, when set, normalizes flag names as they are
	// registered and parsed: cliflag.WordSepNormalizeFunc makes
	// --read_only_port the same flag as --read-only-port, as kubelet
	// accepts it.
	NormalizeFlags func(f *pflag.FlagSet, name string) pflag.NormalizedName
	// GOOS is the operating system the fields marked for one
	// (`strata:"os=linux"`) are checked against; runtime.GOOS when
	// empty. A field of another OS is neither defaulted nor validated,
	// and a file or flag that sets it is an error, unless SkipForeignOS.
	GOOS string
	// SkipForeignOS is for fleets of several operating systems that share
	// their files (kubeadm hands every node one kubelet-config): a field
	// of another OS that a file sets is skipped instead of refused, never
	// applied, and Loaded.Skipped and --explain name it with why. A flag
	// that sets one is still an error: a command line is this host's.
	SkipForeignOS bool
	// Default, when set, defaults what the scheme's defaulting leaves
	// for the component to decide (kubelet's eviction thresholds), on
	// the merged, scheme-defaulted object of the merge version, before it
	// is converted and validated. The keys it sets or changes are
	// credited to "default" in provenance. A panic is an error.
	Default func(versioned runtime.Object)
	// FeatureGates, when set, returns the component's feature gates at
	// their defaults, and every version of Kind keeps its gates where
	// Kubernetes components do, in a top-level featureGates map. A gate a
	// file names that they do not know is then taken out of the file as
	// it is read, and refused with the file named, after the validator's
	// errors (unless a layer above sets or removes it): refusing a
	// hostile file of 250,000 unknown gates costs little more than
	// reading it. The validator still validates the merged gates.
	FeatureGates func() featuregate.MutableFeatureGate
}

// Loaded is a loaded configuration.
type Loaded[T runtime.Object] struct {
	// Object is the hub object: merged, defaulted, converted, validated.
	Object T
	// Versioned is the same configuration in the merge version, defaulted.
	Versioned runtime.Object
	// Provenance holds the effective raw keys (in the merge version) and
	// where each came from, defaults included.
	Provenance *merge.Result
	// Warnings are the decoding warnings of every file.
	Warnings []string
	// Skipped lists the entries of the drop-in directory that were left
	// out, each with why ("config.d/README: no extension; drop-ins end in
	// .conf", "config.d/old.conf: a directory"), and, with SkipForeignOS,
	// the fields of another OS files set ("file shared.yaml: field
	// windowsPriorityClass is for windows only, and this system is
	// linux").
	Skipped []string
	// RestartRequired lists the restart-only keys whose new values a
	// Reload did not apply: Object keeps the running values, and the
	// process must restart for the new ones to take effect.
	RestartRequired []string
	// Hash is the hash of the files it was loaded from
	// (watch.Contents.Hash): Watch starts from a Loaded whose files have
	// not changed without loading them again.
	Hash string
	// At is when it was loaded.
	At time.Time
}

// Load builds the command line, parses args (without the command name)
// and loads the configuration. Its errors are those of NewCommandLine,
// Parse (a *UsageError) and LoadFrom.
func (c *Component[T]) Load(ctx context.Context, args []string) (*Loaded[T], *CommandLine, error) {
	cl, err := c.NewCommandLine()
	if err != nil {
		return nil, nil, err
	}
	if err := cl.Parse(args); err != nil {
		return nil, cl, err
	}
	cfg, err := c.LoadFrom(ctx, cl)
	return cfg, cl, err
}

// LoadFrom loads the configuration from a parsed command line:
//
//  1. Read each file as a layer: --config, then --config-dir's drop-ins in
//     lexical order, then --instance-config. Each file is decoded strictly
//     on its own so errors name it; a file in another version is converted
//     key by key into the merge version.
//  2. Turn flags set on the command line into layers above the files; with
//     no --config, flags bound with LegacyDefault add their defaults below.
//  3. Merge the layers, with provenance.
//  4. Resolve relative paths against the directory of the file whose layer
//     set them; paths from flags against the working directory.
//  5. Decode the merged document in the merge version, which defaults it,
//     and record the keys defaulting filled as "default".
//  6. Convert to the hub type and validate; each error names the layer
//     that set the offending key.
//
// Nothing is applied on error: the error says which file or flag, which
// field and what is wrong.
func (c *Component[T]) LoadFrom(ctx context.Context, cl *CommandLine) (*Loaded[T], error) {
	files, err := c.Read(cl)
	if err != nil {
		return nil, err
	}
	return c.load(ctx, cl, files, nil)
}

// Read reads every file the command line names (--config, --config-dir,
// --instance-config) as one snapshot, the way Watch reads them: a
// ConfigMap mount's ..data or a git-sync link resolved once for all of
// them, so that --config and --config-dir in one volume are never read
// from two updates; only drop-ins read from --config-dir (its
// subdirectories too when DropIns.Recursive); every file bounded by the
// kind's MaxBytes; gzip'd files decompressed.
func (c *Component[T]) Read(cl *CommandLine) (*watch.Contents, error) {
	if c.Kind == nil {
		return nil, errors.New("layers: component " + c.Name + " has no Kind")
	}
	paths := cl.Config.paths()
	if len(paths) == 0 {
		return &watch.Contents{}, nil
	}
	files, err := watch.ReadContents(paths, c.readOptions(cl))
	if err != nil {
		return nil, readError(failedPath(paths, err), c.Kind.MaxBytes(), err)
	}
	return files, nil
}

// readOptions are how Read and Watch read the files cl names.
func (c *Component[T]) readOptions(cl *CommandLine) watch.ReadOptions {
	o := watch.ReadOptions{MaxBytes: c.Kind.MaxBytes(), KeepGzip: c.KeepGzip}
	for _, f := range []string{cl.Config.ConfigFile, cl.Config.InstanceConfig} {
		if f != "" {
			o.FileTargets = append(o.FileTargets, f)
		}
	}
	return c.DropIns.read(o)
}

// failedPath returns the path of paths that err is about, or the first.
func failedPath(paths []string, err error) string {
	var fe *files.Error
	if errors.As(err, &fe) {
		for _, p := range paths {
			if fe.Path == p || strings.HasPrefix(fe.Path, p+string(filepath.Separator)) {
				return fe.Path
			}
		}
	}
	return paths[0]
}

// LoadFiles is LoadFrom building the configuration from files, a snapshot
// Read took or a watcher read, instead of reading them.
func (c *Component[T]) LoadFiles(ctx context.Context, cl *CommandLine, files *watch.Contents) (*Loaded[T], error) {
	return c.load(ctx, cl, files, nil)
}

// Reload loads the configuration again, from files (a snapshot Read took
// or a watcher read), while running is in effect. Keys marked
// restart-only whose effective values changed keep their running values:
// they are listed in RestartRequired, and provenance credits them to
// OriginRunning, shadowing the layer that set the new value. Nothing is
// applied on error.
func (c *Component[T]) Reload(ctx context.Context, cl *CommandLine, files *watch.Contents, running *Loaded[T]) (*Loaded[T], error) {
	next, err := c.load(ctx, cl, files, nil)
	if err != nil || running == nil {
		return next, err
	}
	// Paths compare, and are kept, resolved: the running value is the one
	// the process runs with, and a file moved changes what it means.
	was, err := c.resolvePaths(running.Provenance)
	if err != nil {
		return nil, err
	}
	now, err := c.resolvePaths(next.Provenance)
	if err != nil {
		return nil, err
	}
	pin := restartPins(c.Kind.MergeFields(), was, now)
	if len(pin) == 0 {
		return next, nil
	}
	pinned, err := c.load(ctx, cl, files, pin)
	if err != nil {
		return nil, err
	}
	for k := range pin {
		pinned.RestartRequired = append(pinned.RestartRequired, k)
	}
	slices.Sort(pinned.RestartRequired)
	return pinned, nil
}

// restartPins returns the running values of the restart-only keys whose
// effective values differ between running and next; a key absent from
// running maps to "" (remove it).
func restartPins(fields *validation.Fields, running, next map[string]string) map[string]string {
	t := typed.For(fields.Type())
	pin := map[string]string{}
	for _, values := range []map[string]string{running, next} {
		for k := range values {
			if !fields.Has(k, validation.RestartOnly) {
				continue
			}
			old, inOld := running[k]
			nv, inNext := next[k]
			if inOld == inNext && pipeline.SameValue(t, k, old, nv) {
				continue
			}
			pin[k] = old
		}
	}
	return pin
}

// fileModes returns how the command line's files are decoded: --config
// and --instance-config, and drop-ins; --decode-mode, unless the component
// fixes either.
func (c *Component[T]) fileModes(cl *CommandLine) (file, dropIn scheme.Mode, err error) {
	mode, err := scheme.ParseMode(cl.Config.DecodeMode)
	if err != nil {
		return 0, 0, fmt.Errorf("--decode-mode: %w", err)
	}
	file, dropIn = mode, mode
	if c.FileMode != nil {
		file = *c.FileMode
	}
	if c.DropIns.Mode != nil {
		dropIn = *c.DropIns.Mode
	}
	return file, dropIn, nil
}

// newFile is one of the command line's files, origin where it stands
// among them, read from files.
func (c *Component[T]) newFile(path, origin string, mode scheme.Mode, files Files) *File {
	return &File{Path: path, Origin: origin, Kind: c.Kind, Mode: mode, AllowExperimental: c.AllowExperimental, Files: files}
}

func (c *Component[T]) load(ctx context.Context, cl *CommandLine, contents *watch.Contents, pin map[string]string) (*Loaded[T], error) {
	if c.Kind == nil {
		return nil, errors.New("layers: component " + c.Name + " has no Kind")
	}
	if err := scheme.HubAs[T](c.Kind); err != nil {
		return nil, fmt.Errorf("layers: component %s: %w", c.Name, err)
	}
	fileMode, dropInMode, err := c.fileModes(cl)
	if err != nil {
		return nil, err
	}
	t := typed.For(c.Kind.MergeFields().Type())
	if contents == nil {
		if contents, err = c.Read(cl); err != nil {
			return nil, err
		}
	}
	out := &Loaded[T]{Hash: contents.Hash, At: time.Now()}

	// (1)
	var gate featuregate.MutableFeatureGate
	var known func(string) bool
	if c.FeatureGates != nil {
		if err := keepsGates(c.Kind); err != nil {
			return nil, fmt.Errorf("layers: component %s: %w", c.Name, err)
		}
		gate = c.FeatureGates()
		known = validation.Recognizes(gate)
	}
	var files []*File
	newFile := func(path, origin string, mode scheme.Mode) *File {
		f := c.newFile(path, origin, mode, contents)
		if known != nil {
			f.gates = &gateCheck{known: known}
		}
		return f
	}
	target := func(flag, path string, dir bool) (*watch.Generation, error) {
		g, ok := contents.Target(path)
		switch {
		case !ok:
			return nil, fmt.Errorf("--%s %s: not in the files read", flag, path)
		case g.Dir && !dir:
			return nil, fmt.Errorf("--%s %s: is a directory, not a file", flag, path)
		case !g.Dir && dir:
			return nil, fmt.Errorf("--%s %s: is a file, not a directory of drop-ins", flag, path)
		}
		return g, nil
	}
	if p := cl.Config.ConfigFile; p != "" {
		if _, err := target("config", p, false); err != nil {
			return nil, err
		}
		files = append(files, newFile(p, OriginFile, fileMode))
	}
	if dir := cl.Config.ConfigDir; dir != "" {
		g, err := target("config-dir", dir, true)
		if err != nil {
			return nil, err
		}
		paths, skipped := c.DropIns.dropIns(g)
		out.Skipped = skipped
		for _, p := range paths {
			f := newFile(p, OriginDropIn, dropInMode)
			f.InheritTypeMeta = !c.DropIns.RequireTypeMeta
			files = append(files, f)
		}
	}
	if p := cl.Config.InstanceConfig; p != "" {
		if _, err := target("instance-config", p, false); err != nil {
			return nil, err
		}
		files = append(files, newFile(p, OriginInstanceConfig, fileMode))
	}
	// The defaults of --config's own version, when it is not the merge
	// version, beneath every layer: a file keeps the meaning its version
	// gave it whatever the merge version is. Drop-ins and the instance
	// file bring only what they set.
	fields, goos := c.Kind.MergeFields(), c.goos()
	var fileLayers, versionDefaults []*merge.Layer
	for _, f := range files {
		l, defaults, warnings, err := f.decode(f.Origin == OriginFile)
		if err != nil {
			return nil, err
		}
		if c.SkipForeignOS {
			var skipped []string
			l, skipped = skipForeign(l, fields, goos)
			out.Skipped = append(out.Skipped, skipped...)
		}
		if err := admit(l, fields, goos); err != nil {
			return nil, err
		}
		out.Warnings = append(out.Warnings, warnings...)
		fileLayers = append(fileLayers, l)
		if defaults != nil {
			versionDefaults = append(versionDefaults, withoutForeign(defaults, fields, goos))
		}
	}
	// (2)
	flagLayers, legacy, err := cl.flags.layers(cl.FlagSet, t, cl.Config.ConfigFile == "")
	if err != nil {
		return nil, err
	}
	for _, l := range flagLayers {
		if err := admit(l, fields, goos); err != nil {
			return nil, err
		}
	}
	for i, l := range legacy {
		legacy[i] = withoutForeign(l, fields, goos)
	}
	// (3)
	all := append(append(append(versionDefaults, legacy...), fileLayers...), flagLayers...)
	out.Provenance = merge.Merge(all...)
	// (4)
	values, err := c.resolvePaths(out.Provenance)
	if err != nil {
		return nil, err
	}
	if len(pin) > 0 {
		running := map[string]string{}
		for k, v := range pin {
			delete(values, k)
			running[k] = merge.Tombstone // unset while running: the provenance says so
			if v != "" {
				values[k], running[k] = v, v
			}
		}
		pipeline.Engine.Fill(out.Provenance, merge.Source{Origin: OriginRunning, Name: "restart required"}, running)
	}
	// (5), (6)
	hooks := pipeline.Hooks{Default: c.Default}
	if gate != nil {
		hooks.Refused = refusedGates(gate, files, fileLayers, flagLayers)
	}
	if gated := fields.Gates(); len(gated) > 0 {
		errs, err := gatedOff(out.Provenance, gated, gate)
		if err != nil {
			return nil, fmt.Errorf("layers: component %s: %w", c.Name, err)
		}
		hooks.Refused = append(hooks.Refused, errs...)
	}
	if len(fields.OSFields()) > 0 {
		hooks.Skip = func(key string) bool { return foreign(fields, key, goos) != "" }
	}
	versioned, obj, err := pipeline.Decode[T](c.Kind, values, out.Provenance, hooks)
	if err != nil {
		return nil, err
	}
	out.Versioned, out.Object = versioned, obj
	return out, nil
}

// goos is the operating system OS-specific fields are checked against.
func (c *Component[T]) goos() string {
	if c.GOOS != "" {
		return c.GOOS
	}
	return goruntime.GOOS
}

// admit refuses a layer that sets a field it may not: an instance-only
// field in a file every instance reads (--config and its drop-ins), or a
// field of an operating system other than goos.
func admit(l *merge.Layer, fields *validation.Fields, goos string) error {
	shared := (l.Source.Origin == OriginFile || l.Source.Origin == OriginDropIn) && len(fields.Keys(validation.InstanceOnly)) > 0
	// The first offending key in sorted order is named; a file of many
	// keys is not sorted to find none.
	var first, why string
	for key := range l.Values {
		if first != "" && key > first {
			continue
		}
		var msg string
		if shared && fields.Has(key, validation.InstanceOnly) {
			msg = fmt.Sprintf("field %s is instance-only: set it in --instance-config or with a flag, not in a file every instance reads", fieldName(key))
		} else if p, ok := fields.Under(key, validation.InstanceOnly); shared && ok {
			msg = fmt.Sprintf("field %s sets %s, which is instance-only: set that in --instance-config or with a flag", fieldName(key), fieldName(p))
		} else if os := foreign(fields, key, goos); os != "" {
			msg = fmt.Sprintf("field %s is for %s only, and this system is %s", fieldName(key), os, goos)
		}
		if msg != "" {
			first, why = key, msg
		}
	}
	if first != "" {
		return fmt.Errorf("%s: %s", l.Source, why)
	}
	return nil
}

// foreign returns the operating system key belongs to when it is not
// goos, and "" when key belongs to goos or to every OS.
func foreign(fields *validation.Fields, key, goos string) string {
	if os, _, ok := fields.OS(key); ok && os != goos {
		return os
	}
	return ""
}

// skipForeign returns l without the keys of an operating system other
// than goos, and says of each, in key order, that it was skipped and why.
func skipForeign(l *merge.Layer, fields *validation.Fields, goos string) (*merge.Layer, []string) {
	out := withoutForeign(l, fields, goos)
	if out == l {
		return l, nil
	}
	var skipped []string
	more := 0
	for _, key := range slices.Sorted(maps.Keys(l.Values)) {
		if os := foreign(fields, key, goos); os == "" {
			continue
		} else if len(skipped) < text.MaxListed-1 {
			skipped = append(skipped, fmt.Sprintf("%s: field %s is for %s only, and this system is %s", l.Source, fieldName(key), os, goos))
		} else {
			more++
		}
	}
	if more > 0 {
		skipped = append(skipped, fmt.Sprintf("%s: %d more fields of another operating system", l.Source, more))
	}
	return out, skipped
}

// withoutForeign returns l without the keys of an operating system other
// than goos: defaults of another OS do not apply here.
func withoutForeign(l *merge.Layer, fields *validation.Fields, goos string) *merge.Layer {
	var out *merge.Layer
	for key := range l.Values {
		if foreign(fields, key, goos) == "" {
			continue
		}
		if out == nil {
			out = &merge.Layer{Source: l.Source, Values: maps.Clone(l.Values), Refs: l.Refs, Policy: l.Policy, Lists: l.Lists}
		}
		delete(out.Values, key)
	}
	if out == nil {
		return l
	}
	return out
}

// fieldName writes a key as a field path, "clientConnection.qps".
func fieldName(key string) string { return strings.ReplaceAll(strings.TrimPrefix(key, "/"), "/", ".") }

// resolvePaths returns the effective values of r with every relative path
// made absolute: a path set by a file resolves against that file's
// directory (drop-ins included), a path set by a flag against the working
// directory, a path inside a keyed list's element against the file that
// set the element. Defaults are left as they are. Keys marked
// validation.Path must hold strings.
func (c *Component[T]) resolvePaths(r *merge.Result) (map[string]string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("resolving relative paths: %w", err)
	}
	fields := c.Kind.MergeFields()
	values := r.Values()
	for key, v := range values {
		_, holds := fields.Under(key, validation.Path)
		if !holds && !fields.Has(key, validation.Path) {
			continue
		}
		src, _ := r.SourceOf(key)
		base, ok, err := pathBase(src, wd)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			continue
		}
		if holds && !fields.Has(key, validation.Path) {
			// An element holding paths (a keyed list's): each resolves
			// against what set the element.
			var doc any
			d := json.NewDecoder(strings.NewReader(v))
			d.UseNumber()
			if d.Decode(&doc) != nil {
				continue // the decoder refuses it
			}
			if doc = resolveIn(doc, key, fields, base); doc != nil {
				b, err := json.Marshal(doc)
				if err != nil {
					return nil, err
				}
				values[key] = string(b)
			}
			continue
		}
		var p string
		if err := json.Unmarshal([]byte(v), &p); err != nil {
			return nil, fmt.Errorf("%s: key %q: a path must be a string, not %s", src, key, v)
		}
		if p != "" && !filepath.IsAbs(p) {
			abs, _ := json.Marshal(filepath.Join(base, p))
			values[key] = string(abs)
		}
	}
	return values, nil
}

// pathBase returns what a relative path src set resolves against: the
// directory of a file, wd for a flag; false for a default.
func pathBase(src merge.Source, wd string) (string, bool, error) {
	switch {
	case isFileOrigin(src.Origin):
		dir, err := filepath.Abs(filepath.Dir(src.Name))
		return dir, err == nil, err
	case src.Origin == OriginFlag || src.Origin == OriginLegacyDefault:
		return wd, true, nil
	}
	return "", false, nil
}

// resolveIn returns v, the value at key, with each relative path in it
// made absolute against base; nil when it holds none to change.
func resolveIn(v any, key string, fields *validation.Fields, base string) any {
	switch v := v.(type) {
	case map[string]any:
		changed := false
		for name, child := range v {
			if c := resolveIn(child, merge.Child(key, name), fields, base); c != nil {
				v[name], changed = c, true
			}
		}
		if changed {
			return v
		}
	case []any:
		changed := false
		for i, child := range v {
			if c := resolveIn(child, key+"/"+strconv.Itoa(i), fields, base); c != nil {
				v[i], changed = c, true
			}
		}
		if changed {
			return v
		}
	case string:
		if v != "" && !filepath.IsAbs(v) && fields.Has(key, validation.Path) {
			return filepath.Join(base, v)
		}
	}
	return nil
}
