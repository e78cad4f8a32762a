package layers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stratacfg/strata/internal/typed"
	"github.com/stratacfg/strata/merge"
	"github.com/stratacfg/strata/scheme"
	"github.com/stratacfg/strata/watch"
)

// Migration is one file rewritten in another version (Migrate).
type Migration struct {
	// Path is the file migrated.
	Path string
	// Document is the file in the target version, as YAML.
	Document []byte
	// Kept are the keys the file does not set that the migration writes
	// all the same, so that the file keeps its meaning: the file's own
	// version defaults them one way, the target version another.
	Kept []Kept
	// Warnings are what decoding the file warned of (--decode-mode
	// warn): what it gives that the migration leaves out, a field given
	// twice or one no version of the kind has.
	Warnings []string
}

// Kept is a key a migration writes to keep what the file meant.
type Kept struct {
	// Key is the key in the target version.
	Key string
	// Value is the value written, as JSON: what the file's version
	// defaults the key to.
	Value string
	// Default is what the key would be without it, as JSON: what the
	// target version defaults it to.
	Default string
}

// String says what was kept: "port: 8080 (the target version would
// default it to 8443)".
func (k Kept) String() string {
	return fmt.Sprintf("%s: %s (the target version would default it to %s)", fieldName(k.Key), k.Value, k.Default)
}

// Migrate rewrites the command line's --config file, and the drop-ins of
// its --config-dir when it names one, in version gv, each as YAML, the
// --config file first:
//
//  1. What a file sets, and nothing else: no flags, no other file,
//     relative paths as they are written. Comments are lost. A key a file
//     sets that has no counterpart in gv, or an element it removes from a
//     keyed list, is an error naming it: migrating must not drop a
//     setting silently.
//  2. For the --config file, whose version's defaults lie beneath every
//     layer, also every key it leaves to defaulting whose value gv would
//     default differently, with the value the file's version gives it
//     (Migration.Kept says which): the migrated file means what the file
//     meant. Drop-ins bring only what they set, in any version.
//  3. Each output is decoded strictly in gv; and when the --config file
//     loads on its own, so must its migration, to the same effective
//     configuration.
func (c *Component[T]) Migrate(ctx context.Context, cl *CommandLine, gv schema.GroupVersion) ([]Migration, error) {
	if cl.Config.ConfigFile == "" && cl.Config.ConfigDir == "" {
		return nil, fmt.Errorf("no --config file or --config-dir to migrate")
	}
	m, contents, mode, dropInMode, err := c.newMigrator(cl, gv)
	if err != nil {
		return nil, err
	}
	var out []Migration
	if p := cl.Config.ConfigFile; p != "" {
		mig, err := m.config(ctx, c.newFile(p, OriginFile, mode, contents))
		if err != nil {
			return nil, err
		}
		out = append(out, *mig)
	}
	if dir := cl.Config.ConfigDir; dir != "" {
		g, ok := contents.Target(dir)
		if !ok || !g.Dir {
			return nil, fmt.Errorf("--config-dir %s: not a directory of drop-ins", dir)
		}
		paths, _ := c.DropIns.dropIns(g)
		for _, p := range paths {
			f := c.newFile(p, OriginDropIn, dropInMode, contents)
			f.InheritTypeMeta = !c.DropIns.RequireTypeMeta
			l, _, warnings, err := f.decode(false)
			if err != nil {
				return nil, err
			}
			values, err := m.convert(p, l.Values)
			if err != nil {
				return nil, err
			}
			doc, err := m.render(p, values)
			if err != nil {
				return nil, err
			}
			out = append(out, Migration{Path: p, Document: doc, Warnings: warnings})
		}
	}
	return out, nil
}

// migrator rewrites files in version gv, whose typed view is dst.
type migrator[T runtime.Object] struct {
	c   *Component[T]
	gv  schema.GroupVersion
	dst *typed.Type
}

// newMigrator reads the command line's files and returns a migrator to
// gv, with what was read and the decoding modes of the --config file and
// of the drop-ins.
func (c *Component[T]) newMigrator(cl *CommandLine, gv schema.GroupVersion) (*migrator[T], *watch.Contents, scheme.Mode, scheme.Mode, error) {
	mode, dropInMode, err := c.fileModes(cl)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	contents, err := c.Read(cl)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	obj, err := c.Kind.New(gv)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	return &migrator[T]{c: c, gv: gv, dst: typed.For(reflect.TypeOf(obj))}, contents, mode, dropInMode, nil
}

// maxKeepRounds bounds how often the --config file's migration adds
// defaults: a key kept may change what another defaults to.
const maxKeepRounds = 4

// config migrates the --config file f, keeping what its version's
// defaults meant.
func (m *migrator[T]) config(ctx context.Context, f *File) (*Migration, error) {
	l, own, warnings, err := f.decode(true)
	if err != nil {
		return nil, err
	}
	values, err := m.convert(f.Path, l.Values)
	if err != nil {
		return nil, err
	}
	mergeDefaults, err := m.mergeDefaults()
	if err != nil {
		return nil, err
	}
	mig := &Migration{Path: f.Path, Warnings: warnings}
	kept := map[string]Kept{} // by merge-version key: a later round's wins
	for round := 0; ; round++ {
		doc, err := m.render(f.Path, values)
		if err != nil {
			return nil, err
		}
		again := m.c.newFile(f.Path, OriginFile, f.Mode, single(f.Path, doc))
		set, theirs, _, err := again.decode(true)
		if err != nil {
			return nil, fmt.Errorf("%s: the migrated file does not decode: %w", f.Path, err)
		}
		keep := map[string]string{} // merge-version keys to write
		var changed []string
		for _, d := range differences(set.Values, own, theirs, mergeDefaults) {
			if d.was == "" {
				changed = append(changed, fmt.Sprintf("%s (%s would default it to %s, which the file leaves unset)", fieldName(d.key), m.gv, d.will))
				continue
			}
			keep[d.key] = d.was
			kept[d.key] = Kept{Key: d.key, Value: d.was, Default: cmp.Or(d.will, "null")}
		}
		if len(changed) > 0 {
			return nil, fmt.Errorf("%s: migrating to %s would change what it means: %s", f.Path, m.gv, strings.Join(changed, "; "))
		}
		if len(keep) == 0 {
			mig.Document = doc
			break
		}
		if round == maxKeepRounds {
			return nil, fmt.Errorf("%s: migrating to %s keeps changing defaults: %s", f.Path, m.gv, strings.Join(slices.Sorted(maps.Keys(keep)), ", "))
		}
		added, err := m.convert(f.Path, keep)
		if err != nil {
			return nil, err
		}
		maps.Copy(values, added)
	}
	for _, k := range kept {
		// Named in gv's keys, as the document writes them.
		if to, err := m.convert(f.Path, map[string]string{k.Key: k.Value}); err == nil && len(to) == 1 {
			for key := range to {
				k.Key = key
			}
		}
		mig.Kept = append(mig.Kept, k)
	}
	slices.SortFunc(mig.Kept, func(a, b Kept) int { return strings.Compare(a.Key, b.Key) })
	if err := m.verify(ctx, f, mig.Document); err != nil {
		return nil, err
	}
	return mig, nil
}

// defaultDiff is a key a file leaves to defaulting that its version (was)
// and another (will) default differently; "" for no default.
type defaultDiff struct{ key, was, will string }

// differences are the keys, of the merge version, that a file setting set
// leaves to defaulting and that its version's defaults (own) and another
// version's (theirs) give differently, each over the merge version's
// defaults where it gives none: the file's meaning a version change alone
// would change.
func differences(set map[string]string, own, theirs *merge.Layer, mergeDefaults map[string]string) []defaultDiff {
	over := func(l *merge.Layer, k string) string {
		if l != nil {
			if v, ok := l.Values[k]; ok {
				return v
			}
		}
		return mergeDefaults[k]
	}
	candidates := maps.Clone(mergeDefaults)
	for _, l := range []*merge.Layer{own, theirs} {
		if l != nil {
			maps.Copy(candidates, l.Values)
		}
	}
	var out []defaultDiff
	for _, k := range slices.Sorted(maps.Keys(candidates)) {
		if _, isSet := set[k]; isSet {
			continue
		}
		if w, g := over(own, k), over(theirs, k); w != g {
			out = append(out, defaultDiff{key: k, was: w, will: g})
		}
	}
	return out
}

// UpgradeChange is a key whose effective value would change if the
// --config file were rewritten in another version as it is, its
// apiVersion alone changed (--explain-upgrade): the two versions default
// it differently and nothing else sets it.
type UpgradeChange struct {
	// Key is the field, as --explain names it in the merge version.
	Key string `json:"key"`
	// Value and Source are the key's value now, as JSON, and where it
	// comes from.
	Value  json.RawMessage `json:"value"`
	Source string          `json:"source"`
	// Upgraded and UpgradedSource are what it would be after the
	// upgrade; Upgraded is null when nothing would set it.
	Upgraded       json.RawMessage `json:"upgraded"`
	UpgradedSource string          `json:"upgradedSource"`
}

// ExplainUpgrade returns what upgrading the command line's --config file
// to version gv would change in cfg, the configuration it loaded: each key
// the file leaves to defaulting that its version and gv default
// differently, unless a drop-in, the per-instance file or a flag sets it.
// Nothing is written. --migrate-config writes the file so that nothing
// changes.
func (c *Component[T]) ExplainUpgrade(ctx context.Context, cl *CommandLine, cfg *Loaded[T], gv schema.GroupVersion) ([]UpgradeChange, error) {
	if cl.Config.ConfigFile == "" {
		return nil, errors.New("no --config file to upgrade")
	}
	m, contents, mode, _, err := c.newMigrator(cl, gv)
	if err != nil {
		return nil, err
	}
	f := c.newFile(cl.Config.ConfigFile, OriginFile, mode, contents)
	l, own, _, err := f.decode(true)
	if err != nil {
		return nil, err
	}
	values, err := m.convert(f.Path, l.Values)
	if err != nil {
		return nil, err
	}
	doc, err := m.render(f.Path, values)
	if err != nil {
		return nil, err
	}
	_, theirs, _, err := c.newFile(f.Path, OriginFile, mode, single(f.Path, doc)).decode(true)
	if err != nil {
		return nil, fmt.Errorf("%s: in %s it does not decode: %w", f.Path, gv, err)
	}
	mergeDefaults, err := m.mergeDefaults()
	if err != nil {
		return nil, err
	}
	upgraded := func(k string) string {
		if theirs != nil {
			if _, ok := theirs.Values[k]; ok {
				return theirs.Source.String()
			}
		}
		if _, ok := mergeDefaults[k]; ok {
			return OriginDefault
		}
		return ""
	}
	vals := cfg.Provenance.Values()
	out := []UpgradeChange{}
	for _, d := range differences(l.Values, own, theirs, mergeDefaults) {
		src, ok := cfg.Provenance.SourceOf(d.key)
		if ok && src.Origin != OriginDefault {
			continue // a drop-in, the per-instance file or a flag sets it
		}
		now := cmp.Or(d.was, "null")
		if v, ok := vals[d.key]; ok {
			now = v
		}
		out = append(out, UpgradeChange{
			Key: fieldName(d.key), Value: json.RawMessage(now), Source: cmp.Or(src.String(), "unset"),
			Upgraded: json.RawMessage(cmp.Or(d.will, "null")), UpgradedSource: cmp.Or(upgraded(d.key), "unset"),
		})
	}
	return out, nil
}

// verify loads the --config file and its migration, each on its own, and
// checks that they mean the same. A file that does not load on its own
// (a flag completes it) is checked by its decoding alone.
func (m *migrator[T]) verify(ctx context.Context, f *File, doc []byte) error {
	data, err := f.Files.ReadFile(f.Path)
	if err != nil {
		return err
	}
	before, err := m.alone(ctx, f.Path, data)
	if err != nil {
		return ctx.Err() // the file does not load on its own; its decoding was checked
	}
	after, err := m.alone(ctx, f.Path, doc)
	if err != nil {
		return fmt.Errorf("%s: the file loads, and its migration to %s does not: %w", f.Path, m.gv, err)
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] {
			return fmt.Errorf("%s: migrating to %s would change %s from %s to %s", f.Path, m.gv, fieldName(k), before[k], after[k])
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			return fmt.Errorf("%s: migrating to %s would set %s to %s", f.Path, m.gv, fieldName(k), v)
		}
	}
	return nil
}

// alone loads data as the --config file at path, with nothing else, and
// returns its effective keys in the merge version.
func (m *migrator[T]) alone(ctx context.Context, path string, data []byte) (map[string]string, error) {
	cl, err := m.c.NewCommandLine()
	if err != nil {
		return nil, err
	}
	if err := cl.Parse([]string{"--config", path}); err != nil {
		return nil, err
	}
	loaded, err := m.c.LoadFiles(ctx, cl, single(path, data))
	if err != nil {
		return nil, err
	}
	flat, err := typed.For(reflect.TypeOf(loaded.Versioned)).FlattenObject(loaded.Versioned)
	if err != nil {
		return nil, err
	}
	delete(flat, "/apiVersion")
	delete(flat, "/kind")
	return flat, nil
}

// mergeDefaults are the keys the merge version's defaulting sets on an
// empty document.
func (m *migrator[T]) mergeDefaults() (map[string]string, error) {
	k := m.c.Kind
	empty, _ := json.Marshal(map[string]string{"apiVersion": k.MergeVersion().String(), "kind": k.GroupKind().Kind})
	doc, err := k.Decode(empty, scheme.DecodeOptions{Source: "the defaults", Into: k.MergeVersion(), AllowExperimental: true})
	if err != nil {
		return nil, err
	}
	flat, err := typed.For(k.MergeFields().Type()).FlattenObject(doc.Object)
	if err != nil {
		return nil, err
	}
	delete(flat, "/apiVersion")
	delete(flat, "/kind")
	return flat, nil
}

// convert expresses values, keys of the merge version, as keys of gv. An
// element removed from a keyed list, and a key gv has no field for, are
// errors naming them.
func (m *migrator[T]) convert(path string, values map[string]string) (map[string]string, error) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if values[k] == merge.Tombstone {
			// An element removed ({name: x, $patch: delete}) says
			// nothing a file of another version can hold on its own.
			return nil, fmt.Errorf("%s: key %q removes a list element: migrating would lose the removal", path, k)
		}
	}
	from := m.c.Kind.MergeVersion()
	if m.gv == from {
		return maps.Clone(values), nil
	}
	each, whole, _, err := convertEach(m.c.Kind, from, m.gv, nil, values, m.dst)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out, err := joinKeys(each, whole, m.gv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: migrating would lose it", path, err)
	}
	return out, nil
}

// render writes values, keys of gv, as a document of gv in YAML, and
// checks that it decodes strictly.
func (m *migrator[T]) render(path string, values map[string]string) ([]byte, error) {
	k := m.c.Kind
	values = maps.Clone(values)
	api, _ := json.Marshal(m.gv.String())
	kind, _ := json.Marshal(k.GroupKind().Kind)
	values["/apiVersion"], values["/kind"] = string(api), string(kind)
	doc, err := m.dst.Unflatten(values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := k.Decode(doc, scheme.DecodeOptions{Source: path + " migrated", Mode: scheme.Strict, Into: m.gv, AllowExperimental: true}); err != nil {
		return nil, fmt.Errorf("%s: the migrated file does not decode: %w", path, err)
	}
	return yaml.JSONToYAML(doc)
}

// single is data read as the one file at path.
func single(path string, data []byte) *watch.Contents {
	g := &watch.Generation{Path: path, Resolved: path, Files: []watch.Entry{{Name: filepath.Base(path), Data: data}}}
	return &watch.Contents{Generations: []*watch.Generation{g}, Hash: "migrated"}
}
